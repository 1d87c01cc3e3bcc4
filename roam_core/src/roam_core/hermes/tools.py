"""The agent's three roam tools: `roam_status`, `roam_push`, `roam_pull`.

Each calls the same service function the CLI verb calls (`roam_core.service.verbs`) and
returns one JSON document built from its record (the keys of the verb's `--json`), on
failure too. `roam_pull` with `apply=true` is the only destructive
call: it is refused unless the root config sets `allow_agent_apply: true`, and refused as
well when that config cannot be read (fail closed).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from roam_core.errors import RoamError
from roam_core.service.outcome import Outcome, Record, call

log = logging.getLogger("roam.hermes")

TOOLSET = "roam"

STATUS_SCHEMA: dict[str, Any] = {
    "name": "roam_status",
    "description": (
        "Read-only. Show whether this Hermes home is in sync with the user's other machines "
        "through roam (local changes not pushed, remote changes not pulled). Changes nothing."
    ),
    "parameters": {"type": "object", "properties": {}, "required": []},
}

PUSH_SCHEMA: dict[str, Any] = {
    "name": "roam_push",
    "description": (
        "Upload this home's shared files (skills, memories, SOUL.md, config without secrets) "
        "to the user's roam remote, end-to-end encrypted. Refused with a conflict when the "
        "remote is ahead; pull first. Never changes local files."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "force": {"type": "boolean", "default": False,
                      "description": "Push even though the remote is ahead (overwrites what "
                                     "other machines pushed; only when the user asked)."},
            "dry_run": {"type": "boolean", "default": False,
                        "description": "Only report what would be uploaded."},
        },
        "required": [],
    },
}

PULL_SCHEMA: dict[str, Any] = {
    "name": "roam_pull",
    "description": (
        "Show what pulling from the user's roam remote would change in this home. "
        "DESTRUCTIVE with apply=true: replaces local files (skills, memories, SOUL.md, "
        "config) with the versions from the user's other machines; replaced files are "
        "backed up. apply=true is refused unless the user allowed it in roam's settings; "
        "when refused, ask the user to run `/roam pull apply` or `hermes roam pull --apply`."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "apply": {"type": "boolean", "default": False,
                      "description": "Install the pulled changes (destructive)."},
            "overwrite_conflicts": {"type": "boolean", "default": False,
                                    "description": "With apply: also replace files changed "
                                                   "locally since the last sync."},
        },
        "required": [],
    },
}

SCHEMAS = (STATUS_SCHEMA, PUSH_SCHEMA, PULL_SCHEMA)

UNREACHABLE_ADVICE = ("The roam remote could not be checked, so whether it is ahead is "
                      "unknown: do not pull now; tell the user what failed.")
REFUSAL_ADVICE = ("Applying a pull from the agent is not allowed here. Ask the user to run "
                  "`/roam pull apply` in the chat or `hermes roam pull --apply` in a "
                  "terminal themselves.")


def _scrubbed(value: object) -> object:
    """`value` with Hermes's redaction applied to every string in it."""
    from roam_core.hermes.host import redact

    if isinstance(value, dict):
        return {str(key): _scrubbed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(item) for item in value]
    return redact(value) if isinstance(value, str) else value


def _dump(document: dict[str, object]) -> str:
    # Each string is scrubbed on its own, before it is quoted: run over the JSON text,
    # Hermes's `NAME_TOKEN=value` mask swallows the closing quote of an excerpt such as
    # `GITHUB_TOKEN=[REDACTED]` and the model receives broken JSON.
    return json.dumps(_scrubbed(document), sort_keys=True, default=str)


def _home() -> Path:
    from roam_core.hermes.host import hermes_home_dir

    return hermes_home_dir()


def _flag(args: dict[str, object] | None, name: str) -> bool:
    value = (args or {}).get(name, False)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value is True


#: Lists longer than this are cut in what the model sees (a pull plan can name every file).
MAX_LIST_ITEMS = 50


def _clip(value: object) -> object:
    if isinstance(value, dict):
        return {key: _clip(item) for key, item in value.items()}
    if isinstance(value, list):
        kept = [_clip(item) for item in value[:MAX_LIST_ITEMS]]
        if len(value) > MAX_LIST_ITEMS:
            kept.append(f"… {len(value) - MAX_LIST_ITEMS} more (see `hermes roam` for all)")
        return kept
    return value


def _result(outcome: Outcome[Record], **extra: object) -> dict[str, object]:
    document: dict[str, object] = {"ok": outcome.ok, "exit_code": outcome.code}
    record: Record | None = outcome.record
    said = record.as_json() if record is not None else {}
    if record is not None:
        document["result"] = _clip(said)
    if not outcome.ok:
        document["error"] = (outcome.error or str(said.get("error") or "")
                             or "; ".join(outcome.notices)[:500] or "failed")
    if outcome.conflict:
        document["conflict"] = True
    document.update(extra)
    return document


def agent_apply_allowed(home: Path) -> bool:
    """`allow_agent_apply: true` in the ROOT config; False when unset or unreadable."""
    from roam_core.home import resolve_home
    from roam_core.settings import CoreSettings, load_settings

    try:
        return CoreSettings.build(load_settings(resolve_home(home).root)).allow_agent_apply
    except Exception as error:  # fail closed, but say why the apply was refused
        log.warning("roam: cannot read allow_agent_apply, so apply is refused: %s",
                    error if isinstance(error, RoamError) else type(error).__name__)
        return False


def roam_status(args: dict[str, object] | None = None, **_: object) -> str:
    """Tool handler: `roam status --json`."""
    from roam_core.service import verbs

    home = _home()
    outcome = call(lambda notify: verbs.status(home, notify), "status")
    if not outcome.ok and not outcome.conflict:
        return _dump(_result(outcome, remote_ahead=False, advice=UNREACHABLE_ADVICE))
    ahead = outcome.record is not None and outcome.record.remote_ahead
    return _dump(_result(outcome, remote_ahead=ahead))


def roam_push(args: dict[str, object] | None = None, **_: object) -> str:
    """Tool handler: `roam push --json [--force] [--dry-run]`."""
    from roam_core.service import verbs

    home, force, dry_run = _home(), _flag(args, "force"), _flag(args, "dry_run")
    outcome = call(lambda notify: verbs.push(home, notify, force=force, dry_run=dry_run),
                   "push")
    extra = {"advice": "The remote is ahead: pull first, or ask the user."} \
        if outcome.conflict else {}
    return _dump(_result(outcome, **extra))


def roam_pull(args: dict[str, object] | None = None, **_: object) -> str:
    """Tool handler: `roam pull --json [--apply [--overwrite-conflicts]]`, apply gated."""
    from roam_core.service import verbs

    apply, overwrite = _flag(args, "apply"), _flag(args, "overwrite_conflicts")
    if overwrite and not apply:
        return _dump({"ok": False, "exit_code": 1,
                      "error": "overwrite_conflicts needs apply=true"})
    home = _home()
    if apply and not agent_apply_allowed(home):
        return _dump({"ok": False, "exit_code": 1, "refused": True,
                      "error": "roam_pull with apply=true is disabled (allow_agent_apply is "
                               "not true in roam's settings)",
                      "advice": REFUSAL_ADVICE})
    return _dump(_result(call(lambda notify: verbs.pull(
        home, notify, apply=apply, overwrite_conflicts=overwrite), "pull")))


HANDLERS = {"roam_status": roam_status, "roam_push": roam_push, "roam_pull": roam_pull}
