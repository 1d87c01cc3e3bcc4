"""What a pull does with the optional tiers: archive copies to land, cron jobs to merge.

Called by the planner (`roam_core.engine.plan`) for each store path of the two tiers; like
the planner, nothing is written here: the result is ops for the journal plus report lines.
The engine owns this step (it makes the journal's ops); the tiers themselves
(`roam_core.tiers`) stay pure policy: path parsing and the jobs-file merge.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
from typing import TYPE_CHECKING, Any

from roam_core.engine import roster as roster_module
from roam_core.engine.journal import Op, sha256_file
from roam_core.engine.scan import stat_signature
from roam_core.store.manifest import FileEntry
from roam_core.tiers import archive, cron

if TYPE_CHECKING:
    from roam_core.engine.plan import Planner
    from roam_core.engine.scan import LocalFile
    from roam_core.engine.session import Session


def plan_archive(planner: Planner, rel: str, r: FileEntry | None, b: FileEntry | None) -> None:
    """Land another device's transcript read-only under roam/session-archive/ (or remove it)."""
    parsed = archive.parse(rel)
    session = planner.session
    if parsed is None or parsed.device == session.device_id:
        return  # this device's own archive is never pulled back; a malformed path never lands
    if not session.core.sync_sessions:
        if r is not None and not r.same_content(b):
            planner.archive_off.add(parsed.device)
        return
    target = session.root / parsed.local_rel
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat_module.S_ISREG(st.st_mode):
        planner.plan.kept_by_rules.append(
            {"path": parsed.local_rel, "reason": "not a regular file; the archive copy was not "
             "landed"})
        return
    row = {"device": parsed.device, "profile": parsed.profile, "session_id": parsed.session_id,
           "name": roster_module.name_of(planner.view.snapshot.roster, parsed.device)}
    if r is not None:
        if st is not None and r.same_content(b) and st.st_size == r.size:
            return  # landed before and the remote did not change it
        local_sha = None if st is None else sha256_file(target)
        if local_sha == r.sha256:
            return
        source = planner.remote_source(r)
        planner.plan.ops.append(Op(parsed.local_rel, "write", r.sha256, archive.MODE,
                                   None if st is None else stat_signature(st), local_sha,
                                   source=source))
        planner.plan.archives.append({**row, "action": "added" if st is None else "changed"})
    elif b is not None and st is not None:
        local_sha = sha256_file(target)
        if local_sha == b.sha256:  # the copy roam landed, and the owner no longer publishes it
            planner.plan.ops.append(Op(parsed.local_rel, "delete", expect=stat_signature(st),
                                       original_sha=local_sha))
            planner.plan.archives.append({**row, "action": "removed"})


def archive_off_rows(devices: set[str]) -> list[dict[str, str]]:
    return [{"path": f"{archive.PREFIX}{device}/",
             "reason": "session archive: sync_sessions is off on this device"}
            for device in sorted(devices)]


def plan_cron(planner: Planner, rel: str, r: FileEntry | None, b: FileEntry | None,
              loc: LocalFile | None) -> None:
    """Merge the remote job definitions into this home's jobs file; new or changed: paused."""
    plan = planner.plan
    changed_here = loc is not None and (b is None or loc.sha256 != b.sha256)
    if r is None:
        if changed_here:
            plan.local_changes.append(rel)  # local-only jobs are never deleted by a pull
        return
    if loc is not None and loc.sha256 == r.sha256:
        plan.unchanged += 1  # the same definitions; every local run state stands
        return
    remote_bytes = planner.ahead.read(r)
    local_bytes = None if loc is None else loc.path.read_bytes()
    base_bytes = None if b is None else planner.ahead.read(b)
    path = planner.session.root / rel
    merged = cron.merge_jobs(local_bytes, remote_bytes, split=cron.uses_runtime_db(path),
                             source=str(planner.view.head.device), rel=rel, base=base_bytes,
                             overwrite=planner.overwrite, still_open={
                                 key.removeprefix("job ")
                                 for key in planner.state.entry_conflicts.get(rel, [])})
    profile = cron.profile_of(rel)
    for job_id in merged.refused:
        plan.kept_by_rules.append({"path": f"{rel}: job {job_id}",
                                   "reason": "refused: not a valid cron job id"})
    for job in merged.removed:
        plan.cron_removed.append({"path": rel, "profile": profile, "id": job.job_id,
                                  "name": job.name})
    for job in merged.conflicts:
        plan.cron_conflicts.append({"path": rel, "profile": profile, "id": job.job_id,
                                    "name": job.name})
    planner.note_entry_conflicts(rel, [f"job {job.job_id}" for job in merged.conflicts])
    for landed in merged.landed:
        plan.cron_paused.append({"path": rel, "profile": profile, "id": landed.job_id,
                                 "name": landed.name, "change": landed.change,
                                 "resume": cron.resume_command(profile, landed.job_id)})
    if merged.data is not None:
        data = merged.data
        plan.ops.append(Op(rel, "write", hashlib.sha256(data).hexdigest(),
                           0o600 if loc is None else loc.mode,
                           None if loc is None else loc.signature,
                           None if loc is None else sha256_file(loc.path),
                           source=lambda: iter((data,))))
    elif changed_here:
        plan.local_changes.append(rel)


def iter_tier_lines(plan: Any) -> list[str]:
    """The tiers' part of a pull plan, for people."""
    lines: list[str] = []
    groups: dict[tuple[str, str, str], int] = {}
    for row in plan.archives:
        key = (str(row.get("name") or row["device"]), row["profile"], row["action"])
        groups[key] = groups.get(key, 0) + 1
    for (device, profile, action), count in sorted(groups.items()):
        lines.append(f"session archive {action}: {count} transcript(s) from {device}/{profile} "
                     "(read-only; roam sessions lists them)")
    for job in plan.cron_conflicts:
        lines.append(f"cron job conflict kept local (changed here and on another device): "
                     f"{job['name']} [{job['id']}] in {job['path']}")
    for job in plan.cron_removed:
        lines.append(f"cron job removed (deleted on another device): {job['name']} "
                     f"[{job['id']}] in {job['path']}")
    for job in plan.cron_paused:
        lines.append(f"cron job lands paused ({job['change']}): {job['name']} [{job['id']}] in "
                     f"{job['path']} — approve with: {job['resume']}")
    return lines


def restore_op(session: Session, entry: FileEntry, local: LocalFile | None,
               expect: list[int] | None) -> tuple[Op | None, list[cron.Landed]]:
    """`roam restore` of a jobs file: the old definitions merged in, paused like a pull."""
    merged = cron.merge_jobs(None if local is None else local.path.read_bytes(),
                             session.repo.read_content(entry),
                             split=cron.uses_runtime_db(session.root / entry.path),
                             source="a restore", rel=entry.path, overwrite=True)
    if merged.data is None:
        return None, []
    data = merged.data
    op = Op(entry.path, "write", hashlib.sha256(data).hexdigest(),
            0o600 if local is None else local.mode, expect,
            None if local is None else sha256_file(local.path), source=lambda: iter((data,)))
    return op, merged.landed
