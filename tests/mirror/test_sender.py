from __future__ import annotations

import time
from pathlib import Path

import pytest

from roam_core.mirror import redact, sender
from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.memory import MemoryDestination
from roam_core.mirror.sender import Sender
from roam_core.mirror.spool import Spool
from roam_core.mirror.status import mirror_status

from .conftest import write_settings


def _event(session: str, number: int, redacted: bool = True) -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=f"{session}-q{number} HERMES-ONLY-SECRET",
                           reply=f"a{number}", when=1000.0 + number).with_text(
                               redacted=redacted)


def _texts(destination: MemoryDestination, session: str) -> list[str]:
    return [t.split("\n")[0] for t in destination.arrivals().get(f"default/{session}", [])]


def test_drains_everything_once(root: Path, memory_sink: MemoryDestination) -> None:
    Spool(root).append_many([_event("s", 1), _event("t", 1), _event("s", 2)])
    result = Sender(root).drain_once()
    assert result.delivered == 3 and not result.errors
    assert _texts(memory_sink, "s") == ["s-q1 HERMES-ONLY-SECRET", "s-q2 HERMES-ONLY-SECRET"]
    again = Sender(root).drain_once()
    assert again.delivered == 0
    assert memory_sink.calls == 3
    assert mirror_status(root)["sinks"][0]["pending"] == 0


def test_mirror_off_sends_nothing(root: Path, memory_sink: MemoryDestination) -> None:
    write_settings(root, mirror_sinks=[])
    Spool(root).append(_event("s", 1))
    assert Sender(root).drain_once().delivered == 0
    assert memory_sink.calls == 0


def test_transient_failure_backs_off_and_keeps_order(
        root: Path, memory_sink: MemoryDestination) -> None:
    Spool(root).append_many([_event("s", n) for n in range(1, 4)])
    memory_sink.fail_next = 1
    first = Sender(root).drain_once()
    assert first.delivered == 0 and "memory" in first.errors
    status = mirror_status(root)["sinks"][0]
    assert status["status"] == "retrying" and status["pending"] == 3
    assert Sender(root).drain_once().delivered == 0  # still backing off: no call made
    assert memory_sink.calls == 1
    assert Sender(root).drain_once(force=True).delivered == 3
    assert _texts(memory_sink, "s") == [f"s-q{n} HERMES-ONLY-SECRET" for n in range(1, 4)]


def test_backoff_grows_and_honours_retry_after(root: Path,
                                               memory_sink: MemoryDestination) -> None:
    Spool(root).append(_event("s", 1))
    memory_sink.down = True
    clock = [1000.0]
    worker = Sender(root, clock=lambda: clock[0])
    waits = []
    for _ in range(4):
        worker.drain_once()
        until = Spool(root).read_state()["sinks"]["memory"]["backoff_until"]
        waits.append(until - clock[0])
        clock[0] = until + 0.01
    assert waits == sorted(waits) and waits[0] >= 1 and waits[-1] <= sender.MAX_BACKOFF


def test_terminal_failure_stops_until_forced(root: Path,
                                             memory_sink: MemoryDestination) -> None:
    Spool(root).append(_event("s", 1))
    memory_sink.refuse = True
    Sender(root).drain_once()
    status = mirror_status(root)["sinks"][0]
    assert status["status"] == "stopped" and "refuses" in status["last_error"]
    calls = memory_sink.calls
    clock = time.time() + 10 * sender.MAX_BACKOFF
    Sender(root, clock=lambda: clock).drain_once()
    assert memory_sink.calls == calls  # a refused configuration is not retried by itself
    memory_sink.refuse = False
    assert Sender(root).drain_once(force=True).delivered == 1
    assert mirror_status(root)["sinks"][0]["status"] == "ok"


def test_rejected_event_is_set_aside_after_retries(root: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   memory_sink: MemoryDestination) -> None:
    from roam_core.mirror.memory import MemorySink
    from roam_core.mirror.sink import SinkRejected

    bad = _event("s", 1)
    original = MemorySink.deliver

    def picky(self: MemorySink, event: TurnEvent):
        if event.event_id == bad.event_id:
            raise SinkRejected("too strange")
        return original(self, event)

    monkeypatch.setattr(MemorySink, "deliver", picky)
    Spool(root).append_many([bad, _event("s", 2), _event("u", 1)])
    first = Sender(root).drain_once()
    assert _texts(memory_sink, "u") == ["u-q1 HERMES-ONLY-SECRET"]
    assert _texts(memory_sink, "s") == []  # s-2 waits behind s-1
    assert first.delivered == 1
    for _ in range(sender.REJECT_AFTER):
        Sender(root).drain_once()
    assert _texts(memory_sink, "s") == ["s-q2 HERMES-ONLY-SECRET"]
    assert mirror_status(root)["sinks"][0]["pending"] == 0


def test_a_sink_bug_is_isolated(root: Path, monkeypatch: pytest.MonkeyPatch,
                                memory_sink: MemoryDestination) -> None:
    from roam_core.mirror.memory import MemorySink

    def buggy(self: MemorySink, event: TurnEvent):
        raise KeyError("oops")

    monkeypatch.setattr(MemorySink, "deliver", buggy)
    Spool(root).append(_event("s", 1))
    result = Sender(root).drain_once()
    assert "KeyError" in result.errors["memory"]
    assert mirror_status(root)["sinks"][0]["pending"] == 1


def test_missing_sink_plugin_is_reported(root: Path) -> None:
    write_settings(root, mirror_sinks=["nosuchsink"])
    Spool(root).append(_event("s", 1))
    result = Sender(root).drain_once()
    assert "no sink named 'nosuchsink'" in result.errors["nosuchsink"]
    assert "no sink named" in mirror_status(root)["sinks"][0]["last_error"]


def test_unredacted_turns_wait_for_redaction(root: Path,
                                             memory_sink: MemoryDestination) -> None:
    raw = _event("s", 1, redacted=False)
    Spool(root).append(raw)
    redact.set_hermes_redactor(None)
    result = Sender(root).drain_once()
    assert result.held == 1 and memory_sink.calls == 0
    status = mirror_status(root)
    assert status["held"] == 1 and "not importable" in status["held_reason"]
    redact.set_hermes_redactor(lambda text: text.replace("HERMES-ONLY-SECRET", "[h]"))
    assert Sender(root).drain_once(force=True).delivered == 1
    assert _texts(memory_sink, "s") == ["s-q1 [h]"]
    assert b"HERMES-ONLY-SECRET" in Spool(root).events_path.read_bytes()  # raw stays local
    assert mirror_status(root)["held"] == 0


def test_one_drainer_at_a_time(root: Path, memory_sink: MemoryDestination) -> None:
    Spool(root).append(_event("s", 1))
    with Spool(root).sender_lock() as held:
        assert held
        assert Sender(root).drain_once().busy
    assert Sender(root).drain_once().delivered == 1


def test_background_thread_drains_what_is_appended(root: Path,
                                                   memory_sink: MemoryDestination) -> None:
    Spool(root).append(_event("s", 1))  # spooled by an earlier process
    try:
        sender.ensure_started(root)
        sender.ensure_started(root)
        assert sum(t.name == "roam-mirror-sender" for t in __import__("threading").enumerate()
                   if t.is_alive()) == 1
        Spool(root).append(_event("s", 2))
        sender.wake(root)
        deadline = time.monotonic() + 10
        while len(_texts(memory_sink, "s")) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _texts(memory_sink, "s") == ["s-q1 HERMES-ONLY-SECRET", "s-q2 HERMES-ONLY-SECRET"]
    finally:
        sender.stop(root)


def test_an_idle_pass_writes_nothing(root: Path, memory_sink: MemoryDestination) -> None:
    Spool(root).append(_event("s", 1))
    Sender(root).drain_once()
    state = Spool(root).state_path
    stamp = state.stat().st_mtime_ns
    time.sleep(0.01)
    Sender(root).drain_once()
    assert state.stat().st_mtime_ns == stamp


def test_background_loop_survives_an_unreadable_retry_time(
        root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    runner = sender._Runner(root)

    def broken() -> float:
        raise OSError("spool state unreadable")

    monkeypatch.setattr(runner.sender, "next_wake", broken)
    with caplog.at_level("WARNING", logger="roam_core.mirror.sender"):
        assert runner._timeout() == sender.POLL_SECONDS
    assert "cannot tell the next retry time: OSError: spool state unreadable" in caplog.text
