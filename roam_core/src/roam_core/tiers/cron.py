"""Cron job definitions (`sync_cron`): what of `cron/jobs.json` travels, and how it lands.

Only definitions travel: each job's authored fields (Hermes's `JOB_DEFINITION_FIELDS`, plus
`id`, `created_at` and `repeat.times`). Run state never does: `enabled`, `state`, the pause
markers, `next_run_at`, `last_*`, `repeat.completed` and whatever else a scheduler writes
(0.19 keeps those in jobs.json; newer Hermes moves them to `cron/runtime.db`). An allowlist,
so a scheduler field added by a later Hermes cannot leak. The file travels as its projection:
canonical JSON of the definitions, sorted by id, so a job firing here is not a change.
Both sides normalise a definition the same way: a field holding its Hermes default (None, an
empty skill list, `no_agent: false`, `repeat.times: null`) is the same as a missing one and is
left out, so a job received and pushed back unchanged is byte for byte what its origin sent.

A pull merges job by job (`merge_jobs`): a job new to this home, or whose definition changed,
lands PAUSED in Hermes's own representation and waits for `hermes cron resume <id>`; a job
with the same definition keeps its local state; a job only this home has is never touched.
A job this home received (it is in the definitions it last synced) that another device
deleted is deleted here too, unless its definition changed here since (then it stays).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roam_core import boundedjson
from roam_core.errors import UserError

JOBS_FILE = "cron/jobs.json"
#: Newer Hermes keeps scheduler state here; its presence means the split store format.
RUNTIME_DB = "runtime.db"

#: The fields an operator authors (Hermes `cron/constants.py`), and the declarative extras.
DEFINITION_FIELDS = frozenset({
    "name", "prompt", "skills", "skill", "model", "provider", "base_url", "script",
    "no_agent", "monitor_script", "monitor_url", "context_from", "schedule",
    "schedule_display", "deliver", "origin", "enabled_toolsets", "workdir",
    "attach_to_session", "reasoning_effort", "failure_deliver", "id", "created_at",
})
#: What a 0.19 job record carries beside its definition, as `create_job` writes it.
LEGACY_RUN_STATE: dict[str, Any] = {
    "next_run_at": None, "last_run_at": None, "last_status": None, "last_error": None,
    "last_delivery_error": None,
}
#: Job ids name output folders inside Hermes: anything else is refused.
_JOB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: Any profile folder the scope rules share (not only names Hermes accepts), so no jobs file
#: ever travels raw, with its run state.
_PROFILE = re.compile(r"^profiles/(?!\.\.?/)([^/]+)/cron/jobs\.json$")


def is_jobs_file(rel: str) -> bool:
    """`cron/jobs.json` of the root home or of a profile."""
    return rel == JOBS_FILE or _PROFILE.match(rel) is not None


def profile_of(rel: str) -> str:
    """The Hermes profile a jobs file belongs to (`default` for the root)."""
    found = _PROFILE.match(rel)
    return found.group(1) if found else "default"


def resume_command(profile: str, job_id: str) -> str:
    """The exact command that approves a pulled job."""
    where = "" if profile == "default" else f"-p {profile} "
    return f"hermes {where}cron resume {job_id}"


def parse_jobs(data: bytes, what: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document and its job list, read the way Hermes reads them (BOM, bare list)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{what} is not UTF-8; fix it or turn sync_cron off") from None
    if not text.strip():
        return {"jobs": []}, []
    try:
        document = boundedjson.loads(text, what, strict=False)
    except ValueError as error:
        raise UserError(f"{what} is not valid JSON ({error}); fix it or turn sync_cron "
                        "off") from None
    if isinstance(document, list):
        document = {"jobs": document}
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list) or not all(isinstance(job, dict) for job in jobs):
        raise UserError(f"{what} is not a cron job file (expected {{\"jobs\": [...]}})")
    return document, jobs


#: Values Hermes reads the same as a missing field: a definition never carries them.
_DEFAULTS: dict[str, Any] = {"skills": [], "no_agent": False}


def definition(job: dict[str, Any]) -> dict[str, Any]:
    """The authored part of one job record, without fields that hold their Hermes default."""
    found = {key: value for key, value in job.items()
             if key in DEFINITION_FIELDS and value is not None
             and not (key in _DEFAULTS and value == _DEFAULTS[key])}
    repeat = job.get("repeat")
    if isinstance(repeat, dict) and repeat.get("times") is not None:
        found["repeat"] = {"times": repeat.get("times")}
    return found


def projection(data: bytes, what: str = JOBS_FILE) -> bytes:
    """The bytes that travel for a jobs file: its definitions, canonical and sorted by id."""
    _document, jobs = parse_jobs(data, what)
    definitions = sorted((definition(job) for job in jobs), key=lambda d: str(d.get("id")))
    text = json.dumps({"jobs": definitions}, indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


@dataclass(frozen=True)
class Landed:
    """A job a pull installs paused."""

    job_id: str
    name: str
    change: str  # "new", "changed" or "removed"


@dataclass
class CronMerge:
    """What a pull does to one jobs file; `data` is None when nothing changes."""

    data: bytes | None = None
    landed: list[Landed] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: jobs deleted here because another device deleted them
    removed: list[Landed] = field(default_factory=list)
    #: jobs changed (or defined only) here that the remote defines otherwise: kept local
    conflicts: list[Landed] = field(default_factory=list)


def now_iso() -> str:
    """Hermes's own timestamp form (local time with its offset)."""
    return datetime.datetime.now().astimezone().isoformat()


def _pause(job: dict[str, Any], when: str, reason: str) -> None:
    # 0.19 reads all four from jobs.json; newer Hermes reads `enabled` there and takes the
    # other three as carried scheduler fields ("a field found in jobs.json wins"), moving
    # them to runtime.db on its next save. `hermes cron resume` undoes exactly these.
    job["enabled"] = False
    job["state"] = "paused"
    job["paused_at"] = when
    job["paused_reason"] = reason


def _new_job(spec: dict[str, Any], split: bool) -> dict[str, Any]:
    job = dict(spec)
    if "repeat" in spec:  # a missing repeat is Hermes's "forever": never added here
        job["repeat"] = {"times": spec["repeat"].get("times"), "completed": 0}
    if not split:
        job.update(LEGACY_RUN_STATE)
    return job


def _changed_job(local: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    job = {key: value for key, value in local.items()
           if key not in DEFINITION_FIELDS or key in spec}
    job.update({key: value for key, value in spec.items() if key != "repeat"})
    kept = local.get("repeat")
    if "repeat" in spec or isinstance(kept, dict):  # no repeat in the spec: forever
        job["repeat"] = {**(kept if isinstance(kept, dict) else {}),
                         "times": (spec.get("repeat") or {}).get("times")}
    return job


def merge_jobs(local: bytes | None, remote: bytes, *, split: bool, source: str,
               rel: str = JOBS_FILE, when: str | None = None,
               base: bytes | None = None, overwrite: bool = False,
               still_open: Collection[str] = ()) -> CronMerge:
    """Merge the remote definitions into the local jobs file (see the module docstring).

    `base` is the projection this home last synced, which tells a job deleted elsewhere
    from one only this home has, and a job changed here from one changed there. A job
    changed (or defined only) here that the remote defines otherwise is a conflict, kept
    local unless `overwrite`; `still_open` names jobs kept so by an earlier pull (whose
    remote definition has since become the synced one).
    """
    when = when or now_iso()
    result = CronMerge()
    document, jobs = parse_jobs(local, rel) if local is not None else ({"jobs": []}, [])
    _remote_doc, remote_jobs = parse_jobs(remote, f"the remote {rel}")
    gone = _deleted_elsewhere(jobs, remote_jobs, base, rel)
    if gone:
        result.removed = [Landed(str(job.get("id")), str(job.get("name") or job.get("id")),
                                 "removed") for job in jobs if str(job.get("id")) in gone]
        jobs = [job for job in jobs if str(job.get("id")) not in gone]
    synced = {} if base is None else {
        str(job.get("id")): definition(job)
        for job in parse_jobs(base, f"the last synced {rel}")[1]}
    index = {str(job.get("id")): position for position, job in enumerate(jobs)}
    merged = list(jobs)
    for raw in remote_jobs:
        spec = definition(raw)
        job_id = spec.get("id")
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            result.refused.append(str(job_id)[:80])
            continue
        name = str(spec.get("name") or job_id)
        position = index.get(job_id)
        if position is not None and definition(jobs[position]) == spec:
            continue  # same definition: the local enabled/paused state stands
        if position is not None and (definition(jobs[position]) != synced.get(job_id)
                                     or job_id in still_open):
            if spec == synced.get(job_id) and job_id not in still_open:
                continue  # changed only here: a local change that a push publishes
            if not overwrite:
                result.conflicts.append(Landed(job_id, name, "conflict"))
                continue
        if position is None:
            job = _new_job(spec, split)
            change = "new"
            merged.append(job)
        else:
            job = _changed_job(jobs[position], spec)
            change = "changed"
            merged[position] = job
        _pause(job, when, f"roam: {change} definition from {source}; review it, then "
               f"{resume_command(profile_of(rel), job_id)}")
        result.landed.append(Landed(job_id, name, change))
    if result.landed or result.removed:
        out = dict(document)
        out["jobs"] = merged
        out["updated_at"] = when
        result.data = json.dumps(out, indent=2).encode("utf-8")
    return result


def _deleted_elsewhere(jobs: list[dict[str, Any]], remote_jobs: list[dict[str, Any]],
                       base: bytes | None, rel: str) -> set[str]:
    """Local jobs that were synced, are gone from the remote, and did not change here."""
    if base is None:
        return set()
    _base_doc, base_jobs = parse_jobs(base, f"the last synced {rel}")
    synced = {str(job.get("id")): definition(job) for job in base_jobs}
    remote_ids = {str(job.get("id")) for job in remote_jobs}
    return {str(job.get("id")) for job in jobs
            if str(job.get("id")) in synced and str(job.get("id")) not in remote_ids
            and definition(job) == synced[str(job.get("id"))]}


def uses_runtime_db(jobs_path: Path) -> bool:
    """Whether this cron folder uses the split store (definitions + runtime.db)."""
    return (jobs_path.parent / RUNTIME_DB).exists()
