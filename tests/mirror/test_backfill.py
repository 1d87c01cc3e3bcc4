from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import pytest

from roam_core.errors import UserError
from roam_core.home import Home
from roam_core.mirror import redact
from roam_core.mirror.backfill import backfill, parse_since
from roam_core.mirror.hermes_hook import on_post_llm_call
from roam_core.mirror.spool import Spool

from .conftest import write_settings
from .statedb import StateDB

DAY1 = datetime(2026, 3, 1, 9, 0).timestamp()
DAY2 = datetime(2026, 3, 5, 9, 0).timestamp()


@pytest.fixture
def state(root: Path) -> StateDB:
    write_settings(root, mirror_sinks=["memory"])
    db = StateDB(root / "state.db")
    db.session("20260301_090000_aaaaaa", DAY1, title="Fix the build")
    db.turn("20260301_090000_aaaaaa", "why does CI fail?", "Because of HERMES-ONLY-SECRET.",
            DAY1 + 10, with_tool=True)
    db.turn("20260301_090000_aaaaaa", "thanks", "You're welcome.", DAY1 + 60)
    db.message("20260301_090000_aaaaaa", "user", "interrupted turn", DAY1 + 90)
    db.session("20260305_090000_bbbbbb", DAY2, title=None, source="telegram")
    db.turn("20260305_090000_bbbbbb", "ok", "ok!", DAY2 + 5)
    db.turn("20260305_090000_bbbbbb", "ok", "ok!", DAY2 + 50)  # a repeated turn is two turns
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_backfill_spools_finished_turns_redacted(root: Path, state: StateDB) -> None:
    before = _digest(state.path)
    result = backfill(Home(root))
    assert (result.sessions, result.turns, result.spooled) == (2, 4, 4)
    events = Spool(root).events()
    assert [e.user_message for e in events] == ["why does CI fail?", "thanks", "ok", "ok"]
    assert events[0].reply == "Because of [hermes-redacted]."
    assert all(e.redacted and e.origin == "backfill" for e in events)
    assert events[0].title == "Fix the build" and events[2].source == "telegram"
    assert "TOOL-OUTPUT" not in repr(events) and "INJECTED" not in repr(events)
    assert _digest(state.path) == before  # opened read-only


def test_backfill_is_idempotent(root: Path, state: StateDB) -> None:
    backfill(Home(root))
    again = backfill(Home(root))
    assert (again.spooled, again.skipped) == (0, 4)
    assert len(Spool(root).events()) == 4


def test_backfill_skips_turns_the_live_hook_already_spooled(
        root: Path, state: StateDB, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(root))
    from roam_core.mirror import sender

    monkeypatch.setattr(sender, "ensure_started", lambda _root: None)
    on_post_llm_call(session_id="20260301_090000_aaaaaa", turn_id="t1",
                     user_message="why does CI fail?",
                     assistant_response="Because of HERMES-ONLY-SECRET.")
    result = backfill(Home(root))
    assert (result.spooled, result.skipped) == (3, 1)


def test_since_and_session_filters(root: Path, state: StateDB) -> None:
    assert backfill(Home(root), since=parse_since("2026-03-04")).turns == 2
    assert backfill(Home(root), session="20260301_090000_aaaaaa").spooled == 2
    with pytest.raises(UserError, match="no session"):
        backfill(Home(root), session="nope")
    with pytest.raises(UserError, match="not a date"):
        parse_since("last tuesday")


def test_backfill_refuses_without_redaction(root: Path, state: StateDB) -> None:
    redact.set_hermes_redactor(None)
    with pytest.raises(UserError, match="nothing was spooled"):
        backfill(Home(root))
    assert Spool(root).events() == []


def test_backfill_needs_the_mirror_on_and_a_database(root: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="mirror is off"):
        backfill(Home(root))
    write_settings(root, mirror_sinks=["memory"])
    with pytest.raises(UserError, match="no Hermes state database"):
        backfill(Home(root))


def test_backfill_reads_the_profile_database(root: Path) -> None:
    write_settings(root, mirror_sinks=["memory"])
    db = StateDB(root / "profiles" / "work" / "state.db")
    db.session("20260301_100000_cccccc", DAY1, title="Work thing")
    db.turn("20260301_100000_cccccc", "hello", "hi", DAY1 + 1)
    assert backfill(Home(root, profile="work")).spooled == 1
    assert Spool(root).events()[0].profile == "work"


def _live(session: str, user: str, reply: str, history: list[dict[str, str]]) -> None:
    on_post_llm_call(session_id=session, turn_id=f"t{len(history)}", user_message=user,
                     assistant_response=reply, conversation_history=history)


def test_backfill_knows_live_turns_by_identity_whatever_their_text(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hermes stores a masked reply, or the redaction changed: still one post per turn."""
    monkeypatch.setenv("HERMES_HOME", str(root))
    from roam_core.mirror import sender

    monkeypatch.setattr(sender, "ensure_started", lambda _root: None)
    write_settings(root, mirror_sinks=["memory"])
    sid = "20260301_090000_dddddd"
    db = StateDB(root / "state.db")
    db.session(sid, DAY1, title="Keys")
    history = [{"role": "user", "content": "keep it"}]
    db.message(sid, "user", "keep it", DAY1 + 1)
    db.message(sid, "assistant", "Stored sk-pro...6789 for you.", DAY1 + 2)  # Hermes-masked
    _live(sid, "keep it", "Stored sk-proj-LIVE-TEXT-DIFFERS for you.",
          [*history, {"role": "assistant", "content": "x"}])
    # The next turn's live hook found state.db unreadable: only its index is known.
    monkeypatch.setattr("roam_core.mirror.statedb.live_turn_meta",
                        lambda *a, **k: ("", "", ""))
    _live(sid, "again HERMES-ONLY-SECRET", "second reply, as seen live",
          [*history, {"role": "assistant", "content": "x"},
           {"role": "user", "content": "again"}, {"role": "assistant", "content": "y"}])
    db.turn(sid, "again HERMES-ONLY-SECRET", "second reply, as stored", DAY1 + 10)
    db.turn(sid, "a third turn nobody mirrored", "third", DAY1 + 20)
    live = Spool(root).events()
    assert [e.anchor for e in live] == ["1", ""] and [e.turn_index for e in live] == [0, 1]
    result = backfill(Home(root))
    assert (result.turns, result.spooled, result.skipped) == (3, 1, 2)
    assert [e.user_message for e in Spool(root).events()][-1] == "a third turn nobody mirrored"
    assert backfill(Home(root)).spooled == 0


def test_compacted_turns_keep_their_identity(root: Path, state: StateDB,
                                             memory_sink: object) -> None:
    from roam_core.mirror.sender import Sender

    backfill(Home(root))
    Sender(root).drain_once()
    spool = Spool(root)
    assert spool.compact(["memory"], min_bytes=0) == 4
    assert all(entry.event is None and entry.identities for entry in spool.entries())
    assert backfill(Home(root)).spooled == 0
