"""Issue 19 item 6: auto sync's first-turn notice names the conflicts kept local."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from roam_core.hermes import autosync
from support.inprocess import run_verb


def test_session_notice_mentions_kept_conflicts_once(make_home: Callable[..., Path]) -> None:
    desk = make_home("desk", auto_push=True)
    laptop = make_home("laptop", auto_push=True)
    (desk / "SOUL.md").write_text("soul\n")
    assert run_verb(["init", "--create-remote"], home=desk).ok
    assert run_verb(["push"], home=desk).ok
    assert run_verb(["init"], home=laptop).ok
    assert run_verb(["pull", "--apply"], home=laptop).ok
    (desk / "SOUL.md").write_text("desk soul\n")
    assert run_verb(["push"], home=desk).ok
    (laptop / "SOUL.md").write_text("laptop soul\n")
    pulled = run_verb(["pull", "--apply"], home=laptop)
    assert pulled.code == 2 and pulled.conflict
    autosync.check_remote(laptop, pull=False)
    text = autosync.first_turn_context(laptop)
    assert text is not None and "1 sync conflict(s)" in text and "SOUL.md" in text, text
    assert "--overwrite-conflicts" in text
    autosync.check_remote(laptop, pull=False)
    assert autosync.first_turn_context(laptop) is None  # the same conflicts: not news again


def test_session_notice_mentions_a_kept_memory_entry(make_home: Callable[..., Path]) -> None:
    desk = make_home("desk", auto_push=True)
    laptop = make_home("laptop", auto_push=True)
    memory = Path("memories/MEMORY.md")
    (desk / memory).parent.mkdir(parents=True, exist_ok=True)
    (desk / memory).write_text("likes tea\n§\nlives in Oslo")
    assert run_verb(["init", "--create-remote"], home=desk).ok
    assert run_verb(["push"], home=desk).ok
    assert run_verb(["init"], home=laptop).ok
    assert run_verb(["pull", "--apply"], home=laptop).ok
    (desk / memory).write_text("likes tea\n§\nlives in Bergen")
    assert run_verb(["push"], home=desk).ok
    (laptop / memory).write_text("likes tea\n§\nlives in Tromsø")
    assert run_verb(["pull", "--apply"], home=laptop).code == 2
    assert run_verb(["pull", "--apply"], home=laptop).code == 2  # still open
    autosync.check_remote(laptop, pull=False)
    text = autosync.first_turn_context(laptop)
    assert text is not None and "memories/MEMORY.md: lives in Bergen" in text, text
