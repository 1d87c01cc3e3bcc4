"""Auto sync inside Hermes: push after turns, look at the remote when a session starts.

Hermes fires `on_session_end` after EVERY turn, so the push is debounced by
`push_debounce_seconds` (measured from the last successful automatic push), skipped when
no shared file changed since then, and runs on a daemon thread. `on_session_start` runs
the restricted pull (`auto_pull_shared`) and a status check on a daemon thread and stashes
a one-line notice when the remote is verifiably ahead; `pre_llm_call` shows stashed
notices once, on a session's first turn. Every verb takes the home lock itself and fails
with `LockedError` when another roam command holds it; that is logged and skipped.

Nothing here blocks a turn: the only wait is at `on_session_finalize` with reason
`shutdown` (the process is about to exit), bounded by `FINALIZE_WAIT` in all, so a push
or check started by the last turn of `hermes chat -q` can finish. `hermes -z` exits
without that hook; a push it started is killed and left pending, and the next session
says so.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.service import autostate
from roam_core.service.outcome import Outcome, Record, call
from roam_core.settings import CoreSettings

if TYPE_CHECKING:
    from roam_core.service.verbs import StatusRecord

log = logging.getLogger("roam.hermes")

#: At process exit, how long to let a running automatic push finish (Hermes's own exit
#: watchdog forces the exit after 30 s).
FINALIZE_WAIT = 25.0
#: How long an automatic push waits for this process's own remote check to finish.
CHECK_WAIT = 20.0
#: After a failed automatic push, the next attempt waits at least this long (a remote that
#: is ahead stays ahead until the user pulls; retrying after every turn only costs).
RETRY_AFTER_FAILURE = 60.0
#: The restricted automatic pull: never config.yaml, and the seen generation stays put.
AUTO_PULL_ONLY = ("skills/", "memories/", "SOUL.md")
#: Failures that mean "not now" rather than "failed": nothing is left pending for them.
_SKIPS = {"LockedError": "another roam command holds the home lock",
          "SecretScopeError": "no Hermes secret scope here"}


class _Jobs:
    """The background threads of this process (one push and one check at a time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.push: threading.Thread | None = None
        self.check: threading.Thread | None = None

    def start(self, kind: str, target: Any, *args: Any) -> bool:
        with self.lock:
            running = getattr(self, kind)
            if running is not None and running.is_alive():
                return False
            thread = threading.Thread(target=_logged(kind, target), args=args,
                                      name=f"roam-auto-{kind}", daemon=True)
            setattr(self, kind, thread)
            thread.start()
            return True


jobs = _Jobs()


def _logged(kind: str, target: Any) -> Any:
    def run(*args: Any) -> None:
        try:
            target(*args)
        except Exception as failure:  # a daemon thread's error must end up in the log
            log.warning("roam: automatic %s failed: %s", kind, failure, exc_info=True)
    return run


def _settings(root: Path) -> CoreSettings | None:
    from roam_core.settings import load_settings

    try:
        return CoreSettings.build(load_settings(root))
    except Exception as failure:
        log.info("roam: auto sync skipped: %s", failure)
        return None


def _skip_reason(result: Outcome[Record]) -> str | None:
    return _SKIPS.get(result.error_kind)


def lock_busy(root: Path) -> bool:
    """Whether another roam command holds the home lock right now (then hooks skip)."""
    from roam_core.engine.lock import is_locked

    return is_locked(autostate.state_dir(root))


# -- session end: the debounced automatic push -------------------------------------------------


def session_end(root: Path) -> str:
    """Start an automatic push when it is due; returns what happened (for logs and tests)."""
    settings = _settings(root)
    if not settings or not settings.auto_push:
        return "off"
    if not autostate.initialized(root):
        return "not initialized"
    state = autostate.load(root)
    debounce = settings.number("push_debounce_seconds")
    if time.time() - float(state.get("last_push_at") or 0) < debounce:
        return "debounced"
    pending = state.get("pending")
    if isinstance(pending, dict) and pending.get("reason") and \
            time.time() - float(pending.get("since") or 0) < RETRY_AFTER_FAILURE:
        return "retry later"
    return "started" if jobs.start("push", push_now, root) else "already running"


def _secrets_reason(result: Outcome[Record]) -> str:
    """Why a push stopped on secret findings, naming the paths (never the values)."""
    found = _document(result) if not result.ok else None
    if not isinstance(found, dict) or not found.get("secret_findings"):
        return ""
    paths = sorted({str(item.get("path")) for item in found["secret_findings"]})
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return (f"it found secret-looking values in {', '.join(paths[:3])}{more}; nothing was "
            "pushed (see `roam push --dry-run`)")


def push_now(root: Path) -> str:
    """Push if shared files changed since the last successful automatic push."""
    current = autostate.fingerprint(root)
    state = autostate.load(root)
    if current == state.get("last_push_fingerprint") and not state.get("pending"):
        return "unchanged"
    # This process's own remote check (started with the session) holds the home lock while
    # it runs: wait for it, bounded, instead of skipping a push that only raced our own check.
    checking = jobs.check
    if checking is not None and checking is not threading.current_thread():
        checking.join(CHECK_WAIT)
    if lock_busy(root):
        log.info("roam: automatic push skipped: %s", _SKIPS["LockedError"])
        return "skipped"
    pending = {"since": time.time(), "pid": os.getpid()}
    autostate.update(root, lambda data: data.__setitem__("pending", pending))
    from roam_core.service import verbs

    result = call(lambda notify: verbs.push(root, notify), "push")
    skip = _skip_reason(result)

    def record(data: dict[str, Any]) -> None:
        if result.ok:
            data.update(last_push_at=time.time(), last_push_fingerprint=current,
                        pending=None)
        elif skip:
            data["pending"] = None if data.get("pending") == pending else data.get("pending")
        else:
            reason = _secrets_reason(result) or result.error or (
                "the remote is ahead; pull first" if result.conflict
                else f"exit status {result.code}")
            data["pending"] = {**pending, "reason": reason}

    autostate.update(root, record)
    if result.ok:
        log.info("roam: automatic push done")
        apply_retention(root)
        return "pushed"
    if skip:
        log.info("roam: automatic push skipped: %s", skip)
        return "skipped"
    log.warning("roam: automatic push failed: %s", result.error or result.code)
    return "failed"


def apply_retention(root: Path) -> str:
    """After a successful automatic push, forget what the `retention` setting does not keep.

    Forget only records; prune (the deletion) is never automatic (docs/decisions.md). A
    failure here never undoes or fails the push: it is logged and stashed as a notice.
    """
    from roam_core.engine.retention import Policy
    from roam_core.service import verbs

    settings = _settings(root)
    raw = settings.raw.get("retention") if settings else None
    try:
        policy = Policy.from_setting(raw)
    except Exception as failure:  # a bad setting: say so, the push already succeeded
        return _retention_failed(root, str(failure))
    if policy.empty():
        return "off"
    result = call(lambda notify: verbs.forget(root, notify, policy, apply=True), "forget")
    if not result.ok:
        skip = _skip_reason(result)
        if skip:
            log.info("roam: automatic forget skipped: %s", skip)
            return "skipped"
        return _retention_failed(root, result.error or f"exit status {result.code}")
    forgot = len((_document(result) or {}).get("forget") or [])
    log.info("roam: automatic forget (%s) forgot %d generation(s)", policy.describe(), forgot)
    return f"forgot {forgot}"


def _retention_failed(root: Path, reason: str) -> str:
    log.warning("roam: automatic forget failed: %s", reason)
    autostate.stash_notice(root, f"roam pushed, but applying the retention setting failed: "
                                 f"{reason}; tell the user (roam forget shows the plan).")
    return "failed"


def finalize(root: Path, reason: str) -> None:
    """At shutdown, give running automatic work (push, remote check) a bounded time."""
    if reason != "shutdown":
        return
    until = time.monotonic() + FINALIZE_WAIT
    for thread in (jobs.push, jobs.check):
        if thread is not None and thread.is_alive():
            log.info("roam: waiting for the automatic %s to finish",
                     thread.name.removeprefix("roam-auto-"))
            thread.join(max(0.0, until - time.monotonic()))


# -- session start: restricted pull, remote check, notices --------------------------------------


def session_start(root: Path) -> str:
    """Check the remote (and pull shared files) in the background when auto sync is on."""
    settings = _settings(root)
    if not settings or not (settings.auto_push or settings.auto_pull_shared):
        return "off"
    if not autostate.initialized(root):
        return "not initialized"
    pull = settings.auto_pull_shared
    return "started" if jobs.start("check", check_remote, root, pull) else "already running"


def check_remote(root: Path, pull: bool) -> None:
    """Restricted pull when enabled, then status; stash a notice when the remote is ahead."""
    from roam_core.service import verbs

    if lock_busy(root):
        log.info("roam: remote check skipped: %s", _SKIPS["LockedError"])
        return
    if pull:
        pulled = call(lambda notify: verbs.pull(root, notify, apply=True, only=AUTO_PULL_ONLY,
                                                keep_seen=True), "pull")
        skip = _skip_reason(pulled)
        if skip:
            log.info("roam: automatic pull skipped: %s", skip)
            return
        if not pulled.ok and not pulled.conflict:
            log.warning("roam: automatic pull failed: %s", pulled.error)
        elif changed_count(_document(pulled)):
            autostate.stash_notice(root, "roam pulled newer skills/memories/SOUL.md from "
                                         "your other machines into this home.")
    status = call(lambda notify: verbs.status(root, notify), "status")
    if not status.ok and not status.conflict:
        log.info("roam: remote check skipped: %s", status.error or status.code)
        return
    record = status.record
    if record is None:
        return
    if record.remote_ahead:  # True only when the remote was read and is verifiably ahead
        _notice_ahead(root, record.remote_generation)
    _notice_conflicts(root, open_conflicts(record))


def open_conflicts(record: StatusRecord) -> list[str]:
    """Every conflict `roam status` reports open: files, config keys, memory entries."""
    return [*record.conflicts, *(f"{rel}: {key}" for rel, keys
                                 in sorted(record.entry_conflicts.items()) for key in keys)]


def _notice_conflicts(root: Path, found: list[str]) -> None:
    # Once per set of open conflicts: the same set again is not news.

    def stash(data: dict[str, Any]) -> None:
        if not found or data.get("conflicts_noticed") == found:
            data["conflicts_noticed"] = found
            return
        data["conflicts_noticed"] = found
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        data.setdefault("notices", []).append(
            f"roam kept {len(found)} sync conflict(s) local on this machine ({shown}); tell "
            "the user: /roam status lists them, roam pull --apply --overwrite-conflicts takes "
            "the other machines' versions, roam push publishes these.")

    autostate.update(root, stash)


def _notice_ahead(root: Path, generation: int | None) -> None:
    # One notice per remote generation: a remote that stays ahead is not news again.
    def stash(data: dict[str, Any]) -> None:
        if generation is not None and data.get("ahead_noticed_generation") == generation:
            return
        data["ahead_noticed_generation"] = generation
        notice = ("the roam sync remote has changes this machine has not pulled yet; tell "
                  "the user they can review them with /roam pull (and apply with /roam pull "
                  "apply).")
        notices = data.setdefault("notices", [])
        if notice not in notices:
            notices.append(notice)

    autostate.update(root, stash)


def _document(result: Outcome[Record]) -> dict[str, Any] | None:
    """The verb's `--json` document, or None when it failed before making a record."""
    return None if result.record is None else result.record.as_json()


def changed_count(document: Any) -> int:
    """How many files a `pull --json` plan changed locally (added, changed or removed)."""
    if not isinstance(document, dict):
        return 0
    plan: dict[str, Any] = document["plan"] if isinstance(document.get("plan"), dict) \
        else document
    total = 0
    for key in ("added", "changed", "removed"):
        value = plan.get(key)
        if isinstance(value, list):
            total += len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def first_turn_context(root: Path) -> str | None:
    """The stashed notices as one line for `pre_llm_call`, cleared once shown."""
    notices = autostate.take_notices(root)
    if not notices:
        return None
    return "[roam] " + " ".join(notices)
