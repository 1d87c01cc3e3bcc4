from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from roam_core.mirror import redact, sender
from roam_core.mirror.hermes_hook import on_post_llm_call
from roam_core.mirror.spool import Spool

from .conftest import write_settings
from .statedb import StateDB

KWARGS = dict(task_id="task", turn_id="turn-1", conversation_history=[], model="stub-model",
              platform="cli", telemetry_schema_version="hermes.observer.v1")


@pytest.fixture
def no_thread(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    started: list[Path] = []
    monkeypatch.setattr(sender, "ensure_started", started.append)
    return started


def test_mirror_off_spools_nothing(root: Path, monkeypatch: pytest.MonkeyPatch,
                                   no_thread: list[Path]) -> None:
    monkeypatch.setenv("HERMES_HOME", str(root))
    on_post_llm_call(session_id="s1", user_message="hi", assistant_response="hello", **KWARGS)
    assert not Spool(root).dir.exists() and no_thread == []


def test_turn_is_redacted_spooled_and_the_sender_woken(
        root: Path, monkeypatch: pytest.MonkeyPatch, no_thread: list[Path]) -> None:
    write_settings(root, mirror_sinks=["memory"])
    db = StateDB(root / "profiles" / "work" / "state.db")
    db.session("s1", 1000.0, title="Planning HERMES-ONLY-SECRET", source="cli")
    monkeypatch.setenv("HERMES_HOME", str(root / "profiles" / "work"))
    on_post_llm_call(session_id="s1", user_message="my key sk-abcdefghijklmnopqrstuvwx",
                     assistant_response=[{"type": "text", "text": "HERMES-ONLY-SECRET ok"}],
                     **KWARGS)
    [event] = Spool(root).events()
    assert event.redacted and event.profile == "work" and event.source == "cli"
    assert event.title == "Planning [hermes-redacted]"
    assert "sk-abc" not in event.user_message and event.reply == "[hermes-redacted] ok"
    assert no_thread == [root]
    assert b"sk-abcdef" not in Spool(root).events_path.read_bytes()


def test_redaction_unavailable_holds_the_turn_locally(
        root: Path, monkeypatch: pytest.MonkeyPatch, no_thread: list[Path]) -> None:
    write_settings(root, mirror_sinks=["memory"])
    monkeypatch.setenv("HERMES_HOME", str(root))
    redact.set_hermes_redactor(None)
    on_post_llm_call(session_id="s1", user_message="q", assistant_response="a", **KWARGS)
    [event] = Spool(root).events()
    assert not event.redacted


@pytest.mark.parametrize("kwargs", [
    {},
    {"session_id": "s1"},
    {"session_id": "s1", "assistant_response": object(), "user_message": 42},
])
def test_odd_kwargs_never_raise(root: Path, monkeypatch: pytest.MonkeyPatch,
                                no_thread: list[Path], kwargs: dict) -> None:
    write_settings(root, mirror_sinks=["memory"])
    monkeypatch.setenv("HERMES_HOME", str(root))
    on_post_llm_call(**kwargs)


def test_broken_settings_never_raise(root: Path, monkeypatch: pytest.MonkeyPatch,
                                     no_thread: list[Path],
                                     caplog: pytest.LogCaptureFixture) -> None:
    (root / "config.yaml").write_text("plugins: [unclosed\n")
    monkeypatch.setenv("HERMES_HOME", str(root))
    on_post_llm_call(session_id="s1", user_message="q", assistant_response="a", **KWARGS)
    assert "could not spool" in caplog.text


def test_hook_is_fast(root: Path, monkeypatch: pytest.MonkeyPatch,
                      no_thread: list[Path]) -> None:
    write_settings(root, mirror_sinks=["memory"])
    StateDB(root / "state.db").session("s1", 1000.0, title="t")
    monkeypatch.setenv("HERMES_HOME", str(root))
    timings = []
    for n in range(20):
        started = time.perf_counter()
        on_post_llm_call(session_id="s1", user_message="q" * 5000,
                         assistant_response="a" * 20000, **{**KWARGS, "turn_id": str(n)})
        timings.append(time.perf_counter() - started)
    assert len(Spool(root).events()) == 20
    assert statistics.median(timings) < 0.05, timings
