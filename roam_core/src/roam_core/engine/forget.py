"""`roam forget`: drop generations a retention policy does not keep, by recording them.

Forgetting deletes nothing: it writes one forget record (store/forgets.py) naming the
generations dropped, and from then on history, restore, stats and check step over them.
`roam prune` later deletes what only forgotten generations needed. A forget never drops the
HEAD generation, nor the generation any device of the roster last pushed or pulled (its merge
base), nor the one this device is on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roam_core.engine import remote as remote_module
from roam_core.engine import retention
from roam_core.engine import roster as roster_module
from roam_core.engine.history import generations
from roam_core.engine.progress import ProgressSink
from roam_core.engine.push import now_iso
from roam_core.engine.republish import publish_staged
from roam_core.engine.session import Session
from roam_core.errors import UserError
from roam_core.store.forgets import write_forget


@dataclass
class ForgetPlan:
    """What a policy keeps (with why) and forgets, newest first; `applied` once recorded."""

    policy: str
    keep: list[dict[str, Any]] = field(default_factory=list)
    forget: list[dict[str, Any]] = field(default_factory=list)
    applied: bool = False
    record: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "keep": self.keep, "forget": self.forget,
                "applied": self.applied, "record": self.record}


def _protected(head_generation: int, roster: roster_module.Roster, own: int | None,
               device: str) -> dict[int, list[str]]:
    """Generations no policy may drop, each with the reasons."""
    found: dict[int, list[str]] = {head_generation: ["HEAD"]}
    for device_id, row in roster.items():
        name = roster_module.name_of(roster, device_id)
        for field_name, verb in (("last_push", "pushed"), ("last_pull", "pulled")):
            number = row.get(field_name)
            if isinstance(number, int) and not isinstance(number, bool):
                found.setdefault(number, []).append(f"last {verb} by {name}")
    if own is not None:
        found.setdefault(own, []).append(f"{device} is on it")
    return found


def forget(session: Session, policy: retention.Policy, *, apply: bool,
           progress: ProgressSink | None = None) -> ForgetPlan:
    """Plan (and with `apply`, record) what `policy` forgets. Needs an initialised home.

    `progress` hears of each generation read (a snapshot each, newest first).
    """
    if policy.empty():
        raise UserError("roam forget needs a policy: --keep-last N, --keep-within 30d, "
                        "--keep-daily N (hourly, weekly, monthly, yearly) or "
                        "--keep-generation N")
    state = session.require_state()
    head = remote_module.read_verified_head(session, state)
    plan = ForgetPlan(policy.describe())
    if head is None:
        return plan
    if progress is not None:
        progress.begin(head.generation, 0)  # at most: forgotten ones are stepped over
    chain = []
    for gen in generations(session):
        chain.append(gen)
        if progress is not None:
            progress.advance(0, files=1)
    roster = chain[0].snapshot.roster if chain and chain[0].number == head.generation else {}
    protected = _protected(head.generation, roster, state.generation, state.device)
    decision = retention.apply(policy, [
        retention.Candidate(gen.number, retention.parse_time(gen.snapshot.created))
        for gen in chain])
    dropped: list[tuple[int, str, str | None]] = []
    for gen in chain:
        row = {"generation": gen.number, "date": gen.snapshot.created,
               "device": gen.snapshot.device}
        reasons = list(decision.keep.get(gen.number, []))
        if gen.number in protected:
            reasons.append(f"protected: {', '.join(sorted(set(protected[gen.number])))}")
        if reasons:
            plan.keep.append({**row, "reasons": reasons})
        else:
            plan.forget.append(row)
            dropped.append((gen.number, gen.snapshot_id, gen.snapshot.parent))
    if apply and dropped:
        plan.record = write_forget(session.repo, state.device, state.id, now_iso(),
                                   plan.policy, dropped)
        publish_staged(session.repo, "forget")  # git: the record travels with a ref swap
        plan.applied = True
    return plan
