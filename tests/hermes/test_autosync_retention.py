"""The `retention` setting: auto sync forgets what it does not keep after each push."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_autosync import generations, ok, wait_jobs, write

from roam_core.hermes import autosync
from roam_core.service import autostate
from roam_core.settings import load_settings


def test_automatic_push_forgets_what_the_retention_setting_does_not_keep(
        make_home: Callable[..., Path]) -> None:
    desk = make_home("desk", auto_push=True, push_debounce_seconds=0,
                     retention={"keep_last": 2})
    ok(["init", "--create-remote"], desk)
    for number in range(1, 5):
        write(desk, "memories/MEMORY.md", f"note {number}\n")
        assert autosync.session_end(desk) == "started"
        wait_jobs()
    # Generations 1 and 2 were forgotten (recorded, not deleted: no automatic prune).
    assert sorted(generations(desk)) == [3, 4]
    plan = ok(["forget", "--keep-last", "2", "--json"], desk)
    assert plan["forget"] == []
    assert ok(["check", "--json"], desk) is not None


def test_without_the_setting_auto_push_keeps_every_generation(
        make_home: Callable[..., Path]) -> None:
    desk = make_home("desk", auto_push=True, push_debounce_seconds=0)
    ok(["init", "--create-remote"], desk)
    for number in range(1, 4):
        write(desk, "memories/MEMORY.md", f"note {number}\n")
        assert autosync.push_now(desk) == "pushed"
    assert sorted(generations(desk)) == [0, 1, 2, 3]


def test_a_bad_retention_setting_never_fails_the_push(make_home: Callable[..., Path]) -> None:
    desk = make_home("desk", auto_push=True, push_debounce_seconds=0,
                     retention={"keep_dayly": 3})
    ok(["init", "--create-remote"], desk)
    write(desk, "memories/MEMORY.md", "tea\n")
    assert autosync.push_now(desk) == "pushed"
    assert sorted(generations(desk)) == [0, 1]
    assert autostate.load(desk)["pending"] is None
    notice = autosync.first_turn_context(desk) or ""
    assert "retention setting failed" in notice and "keep_dayly" in notice


@pytest.mark.parametrize(("value", "message"), [
    ("{keep_dayly: 3}", "setting retention: unknown rule 'keep_dayly'"),
    ("{keep_daily: many}", "setting retention: keep_daily must be a whole number"),
    ("{keep_within: 3 weeks}", "invalid duration"),
    ("14", "setting retention must be a mapping"),
])
def test_config_set_refuses_a_bad_retention_policy(
        tmp_path: Path, value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from roam_core.cli.main import main

    assert main(["--home", str(tmp_path), "config", "set", "retention", value]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "config.yaml").exists()


def test_config_set_writes_a_good_retention_policy(tmp_path: Path) -> None:
    from roam_core.cli.main import main

    assert main(["--home", str(tmp_path), "config", "set", "retention",
                 "{keep_daily: 14, keep_monthly: 12}"]) == 0
    assert load_settings(tmp_path)["retention"] == {"keep_daily": 14, "keep_monthly": 12}
