"""Forum channels: each session is a forum post, created together with its first message."""

from __future__ import annotations

from pathlib import Path

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_sink_discord.threads import ThreadMap
from support.discord_server import DiscordServer

from .conftest import CHANNEL, make_sink


def _turn(session: str, number: int) -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=f"{session} q{number}", reply=f"{session} a{number}",
                           title=f"Forum {session}", when=1000.0 + number).with_text(
                               redacted=True)


def test_a_forum_post_per_session_with_its_turns(root: Path, server: DiscordServer) -> None:
    server.forums.add(CHANNEL)
    sink = make_sink(root, server)
    for number in (1, 2):
        for session in ("a", "b"):
            sink.deliver(_turn(session, number))
    assert len(server.threads) == 2
    for thread in server.threads.values():
        starter, *turns = thread.messages
        assert starter["id"] == thread.id  # the post's first message, as on Discord
        assert thread.name.startswith("Forum ") and thread.name[6] in starter["content"]
        assert [m["content"].split("\n")[1] for m in turns] == [
            f"{thread.name[6]} q1", f"{thread.name[6]} q2"]
    creates = [r for r in server.requests if r["path"].endswith("/threads")]
    assert all(r["json"]["message"]["allowed_mentions"] == {"parse": []} for r in creates)


def test_a_locked_forum_post_continues_in_a_new_post(root: Path,
                                                     server: DiscordServer) -> None:
    server.forums.add(CHANNEL)
    sink = make_sink(root, server)
    sink.deliver(_turn("a", 1))
    old = ThreadMap(root).get(CHANNEL, "default/a")["thread_id"]
    server.lock_thread(old)
    sink.deliver(_turn("a", 2))
    new = ThreadMap(root).get(CHANNEL, "default/a")["thread_id"]
    starter, turn = server.messages_in(new)
    assert "Continued" in starter["content"] and "locked" in starter["content"]
    assert turn["content"].split("\n")[1] == "a q2"
    assert server.threads[new].name.startswith("Forum a (continued) · ")
