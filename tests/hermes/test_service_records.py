"""The service layer's records are what the CLI prints: `as_json()` == `roam VERB --json`.

Both faces call the same functions (`roam_core.service`); this pins the published `--json`
documents to the records, verb by verb, on a real home and a real local store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from roam_core.service import review, verbs
from roam_core.service.outcome import call
from support.inprocess import run_verb

#: The published `--json` keys each record must keep (others may be added; raise the
#: record's `schema` before any of these changes meaning or goes away).
PUSH_KEYS = {"added", "bytes_changed", "carried_forward", "changed", "dry_run", "generation",
             "notes", "nothing_to_push", "removed", "secret_findings", "session_archive",
             "skipped", "uploaded_bytes"}
STATUS_KEYS = {"ahead", "backend", "behind", "changes", "conflicts", "device", "dirty",
               "entry_conflicts", "error", "fleet_size", "generations_ahead", "identity",
               "kept_in_backups", "last_push_device", "links_at_top", "local_generation",
               "optional", "profiles", "reachable", "remote_ahead", "remote_generation",
               "remote_time", "root", "skipped"}
PULL_KEYS = {"added", "applied", "changed", "configs_merged", "conflict_reasons",
             "conflicts_kept_local", "created", "cron_conflicts", "cron_paused", "cron_removed",
             "device", "generation", "kept_local_by_rules", "local_changes", "memories_merged",
             "overwritten_conflicts", "plugins_missing", "removed", "root", "session_archive",
             "unchanged", "verified_bytes"}
RESTORE_KEYS = {"action", "applied", "generation", "path", "sha256", "size"}
CHECK_KEYS = {"blobs", "blobs_read", "bytes_read", "files", "floor", "head_generation",
              "identity", "indexes", "ok", "packs", "problems", "read_data", "repairable",
              "snapshots", "trees", "unreferenced_packs"}
HISTORY_KEYS = {"date", "deleted", "device", "generation", "sha256", "size"}


def _steady(document: Any) -> Any:
    """The document without what two runs measure differently (`*_seconds` timings)."""
    if isinstance(document, dict):
        return {key: _steady(value) for key, value in document.items()
                if not key.endswith("_seconds")}
    if isinstance(document, list):
        return [_steady(item) for item in document]
    return document


def _cli(root: Path, *argv: str) -> Any:
    result = run_verb([*argv, "--json"], home=root)
    assert result.code in (0, 1, 2), result.stderr
    return _steady(result.json())


def _notices() -> tuple[list[str], Callable[[str], None]]:
    seen: list[str] = []
    return seen, seen.append


def test_every_record_serialises_to_the_cli_document(make_home: Callable[..., Path]) -> None:
    root = make_home("desk")
    assert run_verb(["init", "--create-remote"], home=root).ok
    (root / "SOUL.md").write_text("first\n")
    seen, notify = _notices()

    dry = verbs.push(root, notify, dry_run=True)
    assert dry.schema == 1 and dry.exit_code == 0
    assert _steady(dry.as_json()) == _cli(root, "push", "--dry-run")
    pushed = verbs.push(root, notify)
    assert pushed.result is not None and pushed.result.generation == 1
    (root / "SOUL.md").write_text("second\n")
    assert run_verb(["push"], home=root).ok

    status = verbs.status(root, notify)
    assert status.reachable and not status.remote_ahead
    assert _steady(status.as_json()) == _cli(root, "status")
    plan = verbs.pull(root, notify)
    assert plan.exit_code == 0 and _steady(plan.as_json()) == _cli(root, "pull")
    assert _steady(review.history(root, notify).as_json()) == _cli(root, "history")
    versions = review.history(root, notify, "SOUL.md")
    assert _steady(versions.as_json()) == _cli(root, "history", "SOUL.md")
    back = review.restore(root, notify, "SOUL.md", 1)
    assert back.action == "replace" and not back.applied
    assert _steady(back.as_json()) == _cli(root, "restore", "SOUL.md", "--generation", "1")
    checked = review.check(root, notify)
    assert checked.exit_code == 0 and _steady(checked.as_json()) == _cli(root, "check")
    assert seen == []
    published = {"push": (dry, PUSH_KEYS), "status": (status, STATUS_KEYS),
                 "pull": (plan, PULL_KEYS), "restore": (back, RESTORE_KEYS),
                 "check": (checked, CHECK_KEYS)}
    for verb, (record, keys) in published.items():
        missing = keys - set(record.as_json())
        assert not missing, f"roam {verb} --json lost published keys: {sorted(missing)}"
    assert set(versions.as_json()[0]) >= HISTORY_KEYS


def test_errors_become_one_line_and_the_exit_code(make_home: Callable[..., Path]) -> None:
    root = make_home("fresh")  # never initialised
    outcome = call(lambda notify: verbs.status(root, notify), "status")
    cli = run_verb(["status", "--json"], home=root)
    assert (outcome.code, outcome.error, outcome.error_kind) == (cli.code, cli.error,
                                                                 cli.error_kind)
    assert outcome.record is None and "\n" not in outcome.error and "roam init" in outcome.error


def test_typed_records_give_back_the_engines_documents(make_home: Callable[..., Path]) -> None:
    """`status` and `restore` records have typed fields; `as_json()` is what the engine said."""
    from roam_core.engine.history import restore as engine_restore
    from roam_core.engine.status import status as engine_status
    from roam_core.service.review import RestoreRecord
    from roam_core.service.session import operation
    from roam_core.service.verbs import StatusRecord

    _seen, notify = _notices()

    def look() -> dict[str, Any]:
        with operation(root, "status", notify, lock=False) as session:
            return engine_status(session)

    root = make_home("desk")
    assert run_verb(["init", "--create-remote"], home=root).ok
    before = look()  # a HEAD with nothing pushed yet
    (root / "SOUL.md").write_text("first\n")
    assert run_verb(["push"], home=root).ok
    (root / "SOUL.md").write_text("second\n")
    changed = look()
    assert changed["dirty"] == 1 and "generations_ahead" in changed
    for report in (before, changed):
        record = StatusRecord.from_report(report)
        assert record.as_json() == report
        assert record.dirty == report["dirty"] and record.extra == {}
    unknown = StatusRecord.from_report({**changed, "new_key": 1})
    assert unknown.as_json()["new_key"] == 1      # a key added by the engine is kept
    with operation(root, "restore", notify) as session:
        results = [engine_restore(session, "SOUL.md", 1, apply=False),
                   engine_restore(session, "SOUL.md", 1, apply=True),
                   engine_restore(session, "SOUL.md", 1, apply=False)]
    assert [result["action"] for result in results] == ["replace", "replace", "unchanged"]
    for result in results:
        record = RestoreRecord.from_result(result)
        assert record.as_json() == result and record.action == result["action"]
