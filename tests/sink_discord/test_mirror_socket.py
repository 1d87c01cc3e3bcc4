"""The whole mirror (hook, spool, sender thread, Discord sink) against the server's socket."""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.mirror import sender
from roam_core.mirror.events import make_live_event
from roam_core.mirror.hermes_hook import on_post_llm_call
from roam_core.mirror.spool import Spool
from roam_core.mirror.status import mirror_status
from support.cli import roam_env
from support.discord_server import DiscordServer

from .conftest import write_config


@pytest.fixture
def live(root: Path, server: DiscordServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    write_config(root, server)
    monkeypatch.setenv("HERMES_HOME", str(root))
    yield root
    sender.stop(root)


def _turn(session: str, number: int, **extra: object) -> None:
    on_post_llm_call(session_id=session, turn_id=f"{session}-{number}", task_id="t",
                     user_message=f"{session} question {number} @everyone",
                     assistant_response=f"{session} answer {number}", model="stub",
                     platform="cli", conversation_history=[],
                     telemetry_schema_version="hermes.observer.v1", **extra)


def _wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _questions(server: DiscordServer) -> dict[str, list[str]]:
    with server.lock:
        return {t.name: [m["content"].split("\n")[1] for m in t.messages]
                for t in server.threads.values()}


def test_hook_stays_fast_while_discord_is_down_and_the_post_arrives_later(
        live: Path, server: DiscordServer) -> None:
    server.stop()  # connection refused: Discord is down for the whole turn
    timings = []
    for number in range(6):
        started = time.perf_counter()
        _turn("down", number)
        timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 0.05, timings
    assert max(timings) < 0.5, timings
    assert mirror_status(live)["sinks"][0]["pending"] == 6
    server.start()  # same port: Discord is back
    assert _wait_until(lambda: server.messages_total() == 6, timeout=30)
    [questions] = _questions(server).values()
    assert questions == [f"down question {n} @everyone" for n in range(6)]
    assert _wait_until(lambda: mirror_status(live)["sinks"][0]["pending"] == 0, timeout=5)


def test_nothing_lost_or_duplicated_through_429s_and_5xx(live: Path,
                                                         server: DiscordServer) -> None:
    stop = threading.Event()
    chaos = random.Random(7)

    def inject() -> None:
        while not stop.is_set():
            kind = chaos.choice(["429", "global", "500", "502", "503"])
            if kind == "429":
                server.inject(429, retry_after=0.05)
            elif kind == "global":
                server.inject(429, retry_after=0.1, global_=True)
            else:
                server.inject(int(kind))
            stop.wait(0.1)

    injector = threading.Thread(target=inject, daemon=True)
    injector.start()
    try:
        for number in range(6):
            for session in ("a", "b", "c"):
                _turn(session, number)
        _wait_until(lambda: server.messages_total() >= 9, timeout=20)
    finally:
        stop.set()
        injector.join()
    with server.lock:
        server.faults.clear()
    deadline = time.monotonic() + 60
    while server.messages_total() < 18 and time.monotonic() < deadline:
        sender.flush(live, timeout=10)
    statuses = server.statuses()
    assert {429, 500} <= set(statuses) or {429, 502} <= set(statuses), statuses
    got = _questions(server)
    assert len(got) == 3
    for session in ("a", "b", "c"):
        [questions] = [q for name, q in got.items() if name.startswith(f"{session} ")]
        assert questions == [f"{session} question {n} @everyone" for n in range(6)]


def test_terminal_401_is_reported_and_stops_sending(live: Path, server: DiscordServer) -> None:
    server.token = "a-different-token"
    _turn("s", 1)
    assert _wait_until(lambda: mirror_status(live)["sinks"][0]["status"] == "stopped", 15)
    report = mirror_status(live)["sinks"][0]
    assert "401" in report["last_error"] and report["pending"] == 1
    count = len(server.requests)
    _turn("s", 2)
    time.sleep(0.5)
    assert len(server.requests) == count  # no more invalid requests
    state = (Spool(live).dir / "state.json").read_text()
    assert "MTIz" not in state


SENDER = ("import sys\nfrom pathlib import Path\nfrom roam_core.mirror.sender import flush\n"
          "r = flush(Path(sys.argv[1]))\nprint(r)\n")


def _spool_turns(root: Path) -> list[str]:
    spool = Spool(root)
    first = make_live_event(session_id="k", turn_id="0", user_message="k question 0",
                            reply="\n\n".join(f"part {n} " + "y" * 1500 for n in range(3)),
                            title="Killed")
    spool.append(first.with_text(redacted=True))
    for number in range(1, 4):
        spool.append(make_live_event(session_id="k", turn_id=str(number),
                                     user_message=f"k question {number}",
                                     reply="short", title="Killed").with_text(redacted=True))
    return [f"k question {n}" for n in range(4)]


@pytest.mark.parametrize("kill_at", [1, 2])
def test_sender_killed_mid_post_then_restarted_duplicates_nothing(
        root: Path, server: DiscordServer, kill_at: int) -> None:
    write_config(root, server)
    _spool_turns(root)
    server.hold_after_create = 60
    env = roam_env()
    worker = subprocess.Popen([sys.executable, "-c", SENDER, str(root)], env=env)
    try:
        for _ in range(kill_at):  # the kill_at-th message was stored, its answer held
            assert server.message_created.wait(30)
            server.message_created.clear()
            if server.messages_total() < kill_at:
                server.release.set()
                server.release.clear()
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
        server.hold_after_create = 0
        server.release.set()
    posted_before = server.messages_total()
    assert posted_before == kill_at
    again = subprocess.run([sys.executable, "-c", SENDER, str(root)], env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    [thread] = server.threads.values()
    contents = [m["content"] for m in thread.messages]
    assert len(contents) == 3 + 3  # three parts for turn 0, one post per later turn
    assert len(set(contents)) == len(contents)
    assert [c.split("\n")[1] for c in contents if c.startswith("**You**")] == \
        [f"k question {n}" for n in range(4)]
    assert mirror_status(root)["sinks"][0]["pending"] == 0
