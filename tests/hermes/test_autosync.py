"""Auto sync's decisions, on real homes sharing a local store (no Hermes needed)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from roam_core.engine.lock import locked
from roam_core.hermes import autosync, hooks
from roam_core.service import autostate
from support.inprocess import run_verb


def ok(argv: list[str], root: Path) -> dict:
    result = run_verb(argv, home=root)
    assert result.ok, (argv, result.code, result.error, result.stdout)
    return result.json() or {}


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def generations(root: Path) -> list[int]:
    return [row["generation"] for row in ok(["history", "--json"], root)]


def wait_jobs() -> None:
    for thread in (autosync.jobs.push, autosync.jobs.check):
        if thread is not None:
            thread.join(30)
            assert not thread.is_alive()


@pytest.fixture(autouse=True)
def _no_leftover_jobs() -> Iterator[None]:
    yield
    wait_jobs()


@pytest.fixture
def desk(make_home: Callable[..., Path]) -> Path:
    root = make_home("desk", auto_push=True, push_debounce_seconds=0)
    ok(["init", "--create-remote"], root)
    return root


def test_nothing_happens_when_off_or_before_init(make_home: Callable[..., Path]) -> None:
    off = make_home("off")
    ok(["init", "--create-remote"], off)
    assert autosync.session_end(off) == "off"
    assert autosync.session_start(off) == "off"
    fresh = make_home("fresh", auto_push=True)
    assert autosync.session_end(fresh) == "not initialized"
    assert autosync.session_start(fresh) == "not initialized"
    broken = make_home("broken")
    (broken / "config.yaml").write_text("plugins: {entries: {roam: {settings: 3}}}\n")
    assert autosync.session_end(broken) == "off"


def test_push_after_change_then_unchanged_then_debounced(desk: Path) -> None:
    write(desk, "memories/MEMORY.md", "tea\n")
    assert autosync.session_end(desk) == "started"
    wait_jobs()
    assert max(generations(desk)) == 1
    state = autostate.load(desk)
    assert state["pending"] is None and state["last_push_at"] > time.time() - 60
    assert autosync.push_now(desk) == "unchanged"          # no new generation for nothing
    assert max(generations(desk)) == 1
    autostate.write_switches(desk, {"push_debounce_seconds": 300})
    write(desk, "memories/MEMORY.md", "coffee\n")
    assert autosync.session_end(desk) == "debounced"


def test_failed_push_is_pending_noticed_once_and_retried_later(
        desk: Path, make_home: Callable[..., Path]) -> None:
    laptop = make_home("laptop")
    ok(["init"], laptop)
    run_verb(["pull", "--apply", "--overwrite-conflicts"], home=laptop)
    write(laptop, "SOUL.md", "laptop soul\n")
    ok(["push", "--json"], laptop)
    write(desk, "memories/MEMORY.md", "desk memory\n")
    assert autosync.push_now(desk) == "failed"
    pending = autostate.load(desk)["pending"]
    assert pending["reason"] and "pull" in pending["reason"]
    text = autosync.first_turn_context(desk)
    assert text is not None and text.startswith("[roam] the last automatic roam push failed")
    assert autosync.first_turn_context(desk) is None       # shown once
    assert autosync.session_end(desk) == "retry later"
    # The pending flag stays until a push succeeds.
    ok(["pull", "--apply"], desk)
    assert autosync.push_now(desk) == "pushed"
    assert autostate.load(desk)["pending"] is None


def test_killed_push_leaves_a_notice(desk: Path) -> None:
    autostate.update(desk, lambda d: d.update(pending={"since": time.time(), "pid": 1}))
    text = autosync.first_turn_context(desk)
    assert text is not None and "did not finish" in text
    # Not retried before the failure back-off only when a reason was recorded.
    assert autosync.session_end(desk) == "started"


def test_lock_held_by_another_command_skips(desk: Path) -> None:
    write(desk, "memories/MEMORY.md", "tea\n")
    with locked(desk / "roam"):
        assert autosync.push_now(desk) == "skipped"
        autosync.check_remote(desk, pull=True)
    assert autostate.load(desk).get("pending") is None
    assert generations(desk) == [0]
    assert autosync.first_turn_context(desk) is None


def test_push_waits_for_this_process_s_own_remote_check(desk: Path) -> None:
    # Under load the session's own check (status, holding the home lock) can still be
    # running when the turn ends: the push waits for it instead of being skipped.
    write(desk, "memories/MEMORY.md", "tea\n")
    holding = threading.Event()

    def slow_check() -> None:
        with locked(desk / "roam"):
            holding.set()
            time.sleep(1.0)

    assert autosync.jobs.start("check", slow_check)
    assert holding.wait(10)
    assert autosync.push_now(desk) == "pushed"
    assert sorted(generations(desk)) == [0, 1]


def test_session_start_notices_remote_ahead_once_per_generation(
        desk: Path, make_home: Callable[..., Path]) -> None:
    laptop = make_home("laptop2", auto_push=True)
    ok(["init"], laptop)
    ok(["pull", "--apply", "--overwrite-conflicts"], laptop)
    assert autosync.session_start(laptop) == "started"
    wait_jobs()
    assert autosync.first_turn_context(laptop) is None     # in sync: nothing to say
    write(desk, "skins/dark.yaml", "name: dark\n")
    ok(["push", "--json"], desk)
    autosync.session_start(laptop)
    wait_jobs()
    text = autosync.first_turn_context(laptop)
    assert text is not None and "/roam pull" in text
    autosync.session_start(laptop)
    wait_jobs()
    assert autosync.first_turn_context(laptop) is None     # same generation: not again


def test_auto_pull_takes_only_shared_prefixes_and_keeps_the_notice(
        desk: Path, make_home: Callable[..., Path]) -> None:
    laptop = make_home("laptop3", auto_pull_shared=True)
    ok(["init"], laptop)
    ok(["pull", "--apply", "--overwrite-conflicts"], laptop)
    write(desk, "skills/notes/tidy/SKILL.md", "---\nname: tidy\n---\n")
    write(desk, "memories/MEMORY.md", "desk memory\n")
    write(desk, "memories/USER.md", "desk user\n")
    write(desk, "skins/dark.yaml", "name: dark\n")
    ok(["push", "--json"], desk)
    write(laptop, "memories/USER.md", "edited on the laptop\n")
    autosync.check_remote(laptop, pull=True)
    assert (laptop / "skills/notes/tidy/SKILL.md").exists()
    assert (laptop / "memories/MEMORY.md").read_text() == "desk memory\n"
    # A local edit is never lost: memories merge by entry, the laptop's entry first.
    assert (laptop / "memories/USER.md").read_text().startswith("edited on the laptop\n")
    assert not (laptop / "skins/dark.yaml").exists()       # not in the restricted set
    text = autosync.first_turn_context(laptop)
    assert text is not None
    assert "pulled newer skills" in text and "has changes this machine has not" in text


def test_pre_llm_call_only_on_the_first_turn(desk: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(desk))
    autostate.stash_notice(desk, "hello from a test")
    callback = hooks.callbacks()["pre_llm_call"]
    assert callback(session_id="s", is_first_turn=False) is None
    assert callback(session_id="s", is_first_turn=True,
                    telemetry_schema_version="x") == {"context": "[roam] hello from a test"}
    assert callback(session_id="s2", is_first_turn=True) is None


def test_finalize_waits_for_a_running_push_only_at_shutdown(
        desk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done: list[str] = []

    def slow_push(root: Path) -> None:
        time.sleep(0.5)
        done.append("pushed")

    monkeypatch.setattr(autosync, "push_now", slow_push)
    write(desk, "memories/MEMORY.md", "x\n")
    assert autosync.session_end(desk) == "started"
    autosync.finalize(desk, "new_session")
    assert done == []
    autosync.finalize(desk, "shutdown")
    assert done == ["pushed"]


def test_state_file_is_private(desk: Path) -> None:
    autostate.stash_notice(desk, "x")
    path = desk / "roam" / autostate.STATE_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["notices"] == ["x"]


def test_automatic_push_meeting_a_secret_does_not_push_and_names_the_path(
        desk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = generations(desk)
    write(desk, "memories/MEMORY.md",
          "user pasted GITHUB_TOKEN=ghp_Fake0123456789abcdefghijklmnopqrstu\n")
    assert autosync.push_now(desk) == "failed"
    assert generations(desk) == before
    text = autosync.first_turn_context(desk)
    assert text is not None and "memories/MEMORY.md" in text
    assert "ghp_Fake" not in text
    monkeypatch.setenv("HERMES_HOME", str(desk))
    result = json.loads(hooks_tool_push())
    assert result["ok"] is False
    [finding] = result["result"]["secret_findings"]
    assert finding["path"] == "memories/MEMORY.md" and "ghp_Fake" not in json.dumps(result)


def hooks_tool_push() -> str:
    from roam_core.hermes.tools import roam_push

    return roam_push({})
