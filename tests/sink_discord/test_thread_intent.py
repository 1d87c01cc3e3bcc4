"""Idempotent thread creation: a thread Discord made but roam never recorded is adopted."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.spool import Spool
from roam_core.mirror.status import mirror_status
from roam_sink_discord.threads import ThreadMap
from support.cli import roam_env
from support.discord_server import DiscordServer, Thread

from .conftest import CHANNEL, make_sink, write_config

SENDER = ("import sys\nfrom pathlib import Path\nfrom roam_core.mirror.sender import flush\n"
          "r = flush(Path(sys.argv[1]))\nprint(r)\n")


def _turn(session: str, number: int, title: str = "Same title") -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=f"{session} q{number}", reply=f"{session} a{number}",
                           title=title, when=1000.0 + number).with_text(redacted=True)


def _questions(server: DiscordServer, thread_id: str) -> list[str]:
    return [m["content"].split("\n")[1] for m in server.messages_in(thread_id)]


def test_sender_killed_after_discord_made_the_thread_adopts_it(root: Path,
                                                               server: DiscordServer) -> None:
    write_config(root, server)
    Spool(root).append(_turn("k", 1))
    server.hold_after_thread = 60
    env = roam_env()
    worker = subprocess.Popen([sys.executable, "-c", SENDER, str(root)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert server.thread_created.wait(30)  # Discord made it; the answer is held
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
        server.hold_after_thread = 0
        server.release.set()
    assert len(server.threads) == 1 and server.messages_total() == 0
    entry = ThreadMap(root).get(CHANNEL, "default/k")
    assert entry is not None and "thread_id" not in entry and entry["intent"]["name"]
    again = subprocess.run([sys.executable, "-c", SENDER, str(root)], env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    [thread] = server.threads.values()  # exactly one thread for the session
    assert _questions(server, thread.id) == ["k q1"]  # the turn is in it, once
    assert ThreadMap(root).get(CHANNEL, "default/k")["thread_id"] == thread.id
    assert mirror_status(root)["sinks"][0]["pending"] == 0
    creates = [r for r in server.requests if r["method"] == "POST"
               and r["path"].endswith("/threads")]
    assert len(creates) == 1


def test_a_lost_creation_answer_is_looked_for_before_creating_again(
        root: Path, server: DiscordServer) -> None:
    server.fail_thread_answer = 500  # the thread is stored, the answer says 500
    receipt = make_sink(root, server).deliver(_turn("s", 1))
    [thread] = server.threads.values()
    assert receipt.details["thread_id"] == thread.id
    assert _questions(server, thread.id) == ["s q1"]
    assert [r["status"] for r in server.requests if r["method"] == "POST"] == [500, 200]


def test_an_archived_thread_of_the_recorded_name_is_adopted(root: Path,
                                                            server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("s", 1))
    [thread] = server.threads.values()
    name = thread.name
    # As if the map write after creation had been lost, and the thread archived since.
    ThreadMap(root).set_intent(CHANNEL, "default/s", name)
    thread.archived = True
    with server.lock:  # a thread of the same name under another channel is not ours
        server.threads["1"] = Thread("1", name, "100000000000000009", 11)
    make_sink(root, server).deliver(_turn("s", 2))
    assert len(server.threads) == 2
    assert _questions(server, thread.id) == ["s q1", "s q2"]


def test_sessions_with_one_title_get_distinct_threads(root: Path,
                                                      server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("a", 1))
    ThreadMap(root).set_intent(CHANNEL, "default/b", "anything")  # b crashed before its POST
    sink.deliver(_turn("b", 1))
    names = sorted(t.name for t in server.threads.values())
    assert len(names) == 2 and names[0] != names[1]
    assert all(n.startswith("Same title · ") and len(n) <= 100 for n in names)
    long = make_sink(root, server).deliver(_turn("c", 1, title="x" * 300))
    assert len(server.threads[long.details["thread_id"]].name) == 100


def test_a_refused_lookup_creates_and_says_why(root: Path, server: DiscordServer,
                                               caplog: pytest.LogCaptureFixture) -> None:
    ThreadMap(root).set_intent(CHANNEL, "default/s", "Same title · 000000")
    server.inject(403, method="GET")
    with caplog.at_level(logging.WARNING):
        receipt = make_sink(root, server).deliver(_turn("s", 1))
    assert "cannot look for the Discord thread" in caplog.text
    assert "403" in caplog.text
    assert _questions(server, receipt.details["thread_id"]) == ["s q1"]
