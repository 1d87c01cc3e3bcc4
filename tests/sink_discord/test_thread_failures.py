"""One bad thread never blocks the others: per-thread 403/404/50083, late answers, give-ups."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.sender import REJECT_AFTER, Sender, retry_given_up
from roam_core.mirror.sink import SinkRetry
from roam_core.mirror.spool import Spool
from roam_core.mirror.status import mirror_status
from roam_sink_discord.threads import ThreadMap
from support.discord_server import DiscordServer

from .conftest import CHANNEL, make_sink, write_config


def _turn(session: str, number: int, title: str = "", user: str = "") -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=user or f"{session} q{number}",
                           reply=f"{session} a{number}", title=title,
                           when=1000.0 + number).with_text(redacted=True)


def _questions(server: DiscordServer, thread_id: str) -> list[str]:
    return [m["content"].split("\n")[1] for m in server.messages_in(thread_id)
            if m["content"].startswith("**You**")]


def _thread_of(root: Path, session: str) -> str:
    entry = ThreadMap(root).get(CHANNEL, f"default/{session}")
    assert entry is not None
    return str(entry["thread_id"])


@pytest.mark.parametrize(("refuse", "why"), [
    ("lock", "locked"), ("archive_locked", "archived"), ("delete", "deleted")])
def test_a_refusing_thread_continues_in_a_new_one_and_others_flow(
        root: Path, server: DiscordServer, refuse: str, why: str) -> None:
    write_config(root, server)
    spool = Spool(root)
    spool.append_many([_turn("a", 1, title="Alpha work"), _turn("b", 1, title="Beta")])
    assert Sender(root).drain_once().delivered == 2
    old = _thread_of(root, "a")
    {"lock": server.lock_thread, "delete": server.delete_thread,
     "archive_locked": lambda t: server.archive_thread(t, locked=True)}[refuse](old)

    spool.append_many([_turn("a", 2, title="Alpha work"), _turn("b", 2, title="Beta"),
                       _turn("a", 3, title="Alpha work")])
    result = Sender(root).drain_once()
    assert result.delivered == 3 and not result.errors
    assert _questions(server, _thread_of(root, "b")) == ["b q1", "b q2"]
    new = _thread_of(root, "a")
    assert new != old
    thread = server.threads[new]
    assert thread.name.startswith("Alpha work (continued) · ")
    first = server.messages_in(new)[0]["content"]
    assert "continued" in first.lower() and why in first
    assert _questions(server, new) == ["a q2", "a q3"]
    status = mirror_status(root)["sinks"][0]
    assert (status["status"], status["pending"], status["given_up"]) == ("ok", 0, [])


def test_after_a_404_the_new_thread_is_named_from_the_session(root: Path,
                                                              server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("s", 1, user="How do I fix the build?"))
    server.delete_thread(_thread_of(root, "s"))
    sink.deliver(_turn("s", 2, user="And the docs?"))
    name = server.threads[_thread_of(root, "s")].name
    assert name.startswith("How do I fix the build? (continued) · "), name


def test_a_second_continuation_gets_its_own_thread(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("s", 1, title="T"))
    server.lock_thread(_thread_of(root, "s"))
    sink.deliver(_turn("s", 2, title="T"))
    second = _thread_of(root, "s")
    server.lock_thread(second)
    sink.deliver(_turn("s", 3, title="T"))
    third = _thread_of(root, "s")
    assert len({second, third}) == 2 and len(server.threads) == 3
    assert _questions(server, third) == ["s q3"]
    assert server.threads[second].name != server.threads[third].name


def test_posting_refused_in_every_thread_stops_the_sink(root: Path,
                                                        server: DiscordServer) -> None:
    write_config(root, server)
    Spool(root).append_many([_turn("a", 1), _turn("b", 1)])
    Sender(root).drain_once()
    server.inject(403, count=100, path_contains="/messages")  # no Send Messages in Threads
    Spool(root).append_many([_turn("a", 2), _turn("b", 2)])
    result = Sender(root).drain_once()
    assert result.delivered == 0 and "Send Messages in Threads" in result.errors["discord"]
    assert len(server.threads) == 3  # one continuation tried, not one per turn
    status = mirror_status(root)["sinks"][0]
    assert status["status"] == "stopped" and status["pending"] == 2


def test_a_given_up_turn_is_listed_then_retried(root: Path, server: DiscordServer) -> None:
    write_config(root, server)
    spool = Spool(root)
    spool.append_many([_turn("a", 1), _turn("b", 1)])
    Sender(root).drain_once()
    bad = _turn("a", 2)
    spool.append_many([bad, _turn("a", 3), _turn("b", 2)])
    server.inject(400, count=REJECT_AFTER, path_contains=f"/channels/{_thread_of(root, 'a')}/")
    for _ in range(REJECT_AFTER):
        Sender(root).drain_once()
    assert _questions(server, _thread_of(root, "b")) == ["b q1", "b q2"]
    assert _questions(server, _thread_of(root, "a")) == ["a q1", "a q3"]
    status = mirror_status(root)["sinks"][0]
    assert status["status"] == "given up" and status["pending"] == 0
    [given_up] = status["given_up"]
    assert given_up["event_id"] == bad.event_id and given_up["session"] == "default/a"
    assert "400" in given_up["reason"] and given_up["at"] > 0
    assert retry_given_up(root) == 1
    result = Sender(root).drain_once()
    assert result.delivered == 1
    assert _questions(server, _thread_of(root, "a")) == ["a q1", "a q3", "a q2"]
    assert mirror_status(root)["sinks"][0]["given_up"] == []


def test_a_late_creation_answer_leaves_no_empty_duplicate(root: Path,
                                                          server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.client.timeout = 0.3
    server.late(1.0, method="POST", path_contains="/threads")
    with pytest.raises(SinkRetry, match="no answer"):
        sink.deliver(_turn("s", 1))
    deadline = time.monotonic() + 5
    while not server.threads and time.monotonic() < deadline:
        time.sleep(0.05)
    make_sink(root, server).deliver(_turn("s", 1))
    [thread] = server.threads.values()
    assert _questions(server, thread.id) == ["s q1"]
