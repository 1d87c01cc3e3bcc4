from __future__ import annotations

import json
from pathlib import Path

import pytest

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.sink import SinkRejected, SinkRetry, SinkTerminal
from roam_core.types import PluginContext
from roam_sink_discord.sink import DiscordSink, nonce_for
from roam_sink_discord.threads import ThreadMap
from support.discord_server import DiscordServer

from .conftest import CHANNEL, TOKEN, make_sink, settings


def _turn(session: str, number: int, user: str = "", reply: str = "") -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=user or f"{session} q{number}",
                           reply=reply or f"{session} a{number}", title=f"Title {session}",
                           when=1000.0 + number).with_text(redacted=True)


def _posts(server: DiscordServer) -> list[dict]:
    return [r for r in server.requests if r["path"].endswith("/messages")
            and r["method"] == "POST"]


def test_one_public_thread_per_session_one_post_per_turn(root: Path,
                                                         server: DiscordServer) -> None:
    sink = make_sink(root, server)
    for number in range(3):
        for session in ("s1", "s2"):
            sink.deliver(_turn(session, number, user="@everyone look <@123>"))
    assert len(server.threads) == 2
    for thread in server.threads.values():
        assert thread.type == 11 and thread.parent_id == CHANNEL
        assert thread.name.startswith("Title s")
        assert len(thread.messages) == 3
    for request in _posts(server):
        body = request["json"]
        assert body["allowed_mentions"] == {"parse": []}
        assert body["enforce_nonce"] is True and len(body["nonce"]) <= 25
        assert request["auth"] == f"Bot {TOKEN}"
    created = [r for r in server.requests if r["path"].endswith("/threads")]
    assert all(r["json"]["type"] == 11 for r in created)
    mapping = json.loads((root / "state" / "session-mirror.json").read_text())
    assert set(mapping["channels"][CHANNEL]) == {"default/s1", "default/s2"}
    assert (root / "state" / "session-mirror.json").stat().st_mode & 0o777 == 0o600


def test_long_turns_are_split_at_2000(root: Path, server: DiscordServer) -> None:
    reply = "\n\n".join(f"Paragraph {n}: " + "ü" * 700 for n in range(8))
    make_sink(root, server).deliver(_turn("s", 1, reply=reply))
    [thread] = server.threads.values()
    assert len(thread.messages) >= 3
    assert all(len(m["content"]) <= 2000 for m in thread.messages)
    joined = "\n\n".join(m["content"] for m in thread.messages)
    for n in range(8):
        assert f"Paragraph {n}: " + "ü" * 700 in joined


def test_redelivery_posts_nothing(root: Path, server: DiscordServer) -> None:
    event = _turn("s", 1)
    make_sink(root, server).deliver(event)
    receipt = make_sink(root, server).deliver(event)
    [thread] = server.threads.values()
    assert len(thread.messages) == 1
    assert receipt.details["message_ids"] == [thread.messages[0]["id"]]


def test_nonce_makes_a_repeated_post_a_no_op(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    event = _turn("s", 1)
    sink.deliver(event)
    [thread] = server.threads.values()
    again = sink._post(thread.id, event.event_id, 0, "**You**\ns q1")  # as after a crash
    assert again == thread.messages[0]["id"] and len(thread.messages) == 1
    assert nonce_for(event.event_id, 0) != nonce_for(event.event_id, 1)


def test_bucket_headers_are_honoured_without_429(root: Path) -> None:
    with DiscordServer(token=TOKEN, channels={CHANNEL}, bucket_limit=2,
                       bucket_window=0.5) as server:
        sleeps: list[float] = []
        sink = make_sink(root, server, sleeps=sleeps)
        for number in range(6):
            sink.deliver(_turn("s", number))
        assert 429 not in server.statuses()
        assert sleeps and max(sleeps) <= 0.5
        assert len(next(iter(server.threads.values())).messages) == 6


def test_429_sleeps_retry_after_then_succeeds(root: Path, server: DiscordServer) -> None:
    sleeps: list[float] = []
    sink = make_sink(root, server, sleeps=sleeps)
    sink.deliver(_turn("s", 0))
    server.inject(429, retry_after=0.3, path_contains="/messages")
    sink.deliver(_turn("s", 1))
    assert server.statuses().count(429) == 1
    assert any(0.25 <= s <= 0.35 for s in sleeps), sleeps
    assert len(next(iter(server.threads.values())).messages) == 2


def test_global_429_pauses_every_route(root: Path, server: DiscordServer) -> None:
    sleeps: list[float] = []
    sink = make_sink(root, server, sleeps=sleeps)
    server.inject(429, retry_after=0.4, global_=True)
    sink.deliver(_turn("s", 1))  # thread creation hits the global limit
    assert sink.client._global_until > 0
    assert any(0.35 <= s <= 0.45 for s in sleeps), sleeps
    assert len(next(iter(server.threads.values())).messages) == 1


def test_long_429_goes_back_to_the_spool(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server, max_wait=1.0)
    server.inject(429, retry_after=30, global_=True)
    with pytest.raises(SinkRetry) as caught:
        sink.deliver(_turn("s", 1))
    assert caught.value.retry_after == pytest.approx(30, abs=1)
    with pytest.raises(SinkRetry):  # the pause is remembered, nothing is sent meanwhile
        sink.deliver(_turn("s", 1))
    assert len(server.requests) == 1


def test_5xx_is_retried_then_handed_back(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    server.inject(502, count=2)
    sink.deliver(_turn("s", 1))
    assert server.statuses()[:2] == [502, 502]
    server.inject(503, count=10)
    with pytest.raises(SinkRetry, match="server error"):
        sink.deliver(_turn("s", 2))
    server.faults.clear()
    sink.deliver(_turn("s", 2))
    assert len(next(iter(server.threads.values())).messages) == 2


@pytest.mark.parametrize(("status", "words"), [(401, "refused the bot token"),
                                                (403, "Send Messages in Threads")])
def test_401_and_403_are_terminal(root: Path, server: DiscordServer, status: int,
                                  words: str) -> None:
    server.inject(status)
    with pytest.raises(SinkTerminal, match=words) as caught:
        make_sink(root, server).deliver(_turn("s", 1))
    assert TOKEN not in str(caught.value)
    assert len(server.requests) == 1  # never retried


def test_wrong_token_is_terminal(root: Path, server: DiscordServer) -> None:
    (root / ".env").write_text("ROAM_DISCORD_BOT_TOKEN=MTIz.wrong.token\n")
    with pytest.raises(SinkTerminal, match="401"):
        make_sink(root, server).deliver(_turn("s", 1))


def test_missing_channel_is_terminal(root: Path, server: DiscordServer) -> None:
    context = PluginContext(home=root, state_dir=root / "roam",
                            secret=lambda name: TOKEN)
    sink = DiscordSink({**settings(server), "discord_channel_id": "999"}, context)
    with pytest.raises(SinkTerminal, match="999"):
        sink.deliver(_turn("s", 1))


def test_deleted_thread_is_recreated(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("s", 1))
    [old] = list(server.threads)
    server.delete_thread(old)
    sink.deliver(_turn("s", 2))
    [new] = list(server.threads)
    assert new != old
    note, post = server.messages_in(new)
    assert "deleted" in note["content"] and post["content"].split("\n")[1] == "s q2"
    assert ThreadMap(root).get(CHANNEL, "default/s")["thread_id"] == new


def test_token_problems(root: Path, server: DiscordServer) -> None:
    def unscoped(name: str) -> str:
        raise RuntimeError("UnscopedSecretError: no scope")

    sink = DiscordSink(settings(server), PluginContext(root, root / "roam", unscoped))
    with pytest.raises(SinkRetry, match="not readable here"):
        sink.deliver(_turn("s", 1))
    missing = DiscordSink(settings(server), PluginContext(root, root / "roam", lambda n: None))
    with pytest.raises(SinkTerminal, match="not set"):
        missing.deliver(_turn("s", 1))
    assert missing.fingerprint() != make_sink(root, server).fingerprint()
    assert server.requests == []


def test_bad_settings_are_clear_errors(root: Path, server: DiscordServer) -> None:
    from roam_core.errors import ConfigError

    context = PluginContext(root, root / "roam", lambda n: TOKEN)
    with pytest.raises(ConfigError, match="discord_channel_id"):
        DiscordSink({"discord_channel_id": "general"}, context)
    with pytest.raises(ConfigError, match="discord_api_base"):
        DiscordSink({"discord_channel_id": "1", "discord_api_base": "ftp://x"}, context)
    # credentials in the base would travel in the fingerprint (the spool's state file)
    with pytest.raises(ConfigError, match="must not contain credentials") as raised:
        DiscordSink({"discord_channel_id": "1",
                     "discord_api_base": "https://user:hunter2@proxy.example/api"}, context)
    assert "hunter2" not in str(raised.value)


def test_a_rejected_message_is_reported(root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    sink.deliver(_turn("s", 1))
    server.inject(400, path_contains="/messages")
    with pytest.raises(SinkRejected, match="400"):
        sink.deliver(_turn("s", 2))


def test_a_post_interrupted_beyond_the_nonce_window_is_found_not_resent(
        root: Path, server: DiscordServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import roam_sink_discord.sink as sink_module
    from roam_sink_discord.format import format_turn

    sink = make_sink(root, server)
    sink.deliver(_turn("s", 0))
    [thread] = list(server.threads)
    event = _turn("s", 1)
    content = format_turn(event)
    # A sender posted turn 1 and died before recording it; Discord forgot the nonce since.
    server.nonce_window = 0
    with server.lock:
        server.threads[thread].messages.append({"id": "555", "content": content})
    ThreadMap(root).set_progress(CHANNEL, "default/s", event.event_id, [], attempting=1.0)
    receipt = make_sink(root, server).deliver(event)
    assert receipt.details["message_ids"] == ["555"]
    assert len(server.messages_in(thread)) == 2
    # Without Read Message History (403 on the read) it sends again rather than stopping.
    monkeypatch.setattr(sink_module, "NONCE_WINDOW", 0.0)
    other = _turn("s", 2)
    ThreadMap(root).set_progress(CHANNEL, "default/s", other.event_id, [], attempting=1.0)
    server.inject(403, method="GET")
    make_sink(root, server).deliver(other)
    assert len(server.messages_in(thread)) == 3


def test_the_thread_is_renamed_once_when_the_session_gets_a_title(
        root: Path, server: DiscordServer) -> None:
    sink = make_sink(root, server)
    untitled = make_live_event(session_id="s", turn_id="1", user_message="hello there",
                               reply="hi").with_text(redacted=True)
    sink.deliver(untitled)
    [thread] = server.threads.values()
    assert thread.name.startswith("hello there · ")
    for number in (2, 3):
        sink.deliver(_turn("s", number))  # Hermes titled the session: "Title s"
    assert thread.name.startswith("Title s · ") and thread.name.endswith(
        server.renames[0][1][-6:])
    assert len(server.renames) == 1


def test_the_footer_setting(root: Path, server: DiscordServer) -> None:
    context = PluginContext(home=root, state_dir=root / "roam", secret=lambda name: TOKEN)
    sink = DiscordSink({**settings(server), "discord_footer": True}, context)
    sink.deliver(_turn("s", 1).with_text(model="stub-model"))
    [message] = server.all_messages()
    assert message["content"].splitlines()[-1].startswith("-# stub-model")
