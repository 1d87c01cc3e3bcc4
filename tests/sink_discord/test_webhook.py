"""The webhook sink: forum posts through a webhook URL, no bot; the URL never travels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.sender import Sender
from roam_core.mirror.sink import SinkTerminal
from roam_core.mirror.spool import Spool
from roam_core.mirror.status import mirror_status
from roam_core.secrets import reader
from roam_core.types import PluginContext
from roam_sink_discord.webhook import DiscordWebhookSink
from support.discord_server import DiscordServer

from .conftest import CHANNEL


def _turn(session: str, number: int) -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=f"{session} q{number} @everyone",
                           reply=f"{session} a{number}", title=f"Hook {session}",
                           when=1000.0 + number).with_text(redacted=True)


@pytest.fixture
def hook(root: Path, server: DiscordServer) -> str:
    server.forums.add(CHANNEL)
    url = server.add_webhook(CHANNEL)
    (root / ".env").write_text(f"ROAM_DISCORD_WEBHOOK_URL={url}\n")
    import yaml

    (root / "config.yaml").write_text(yaml.safe_dump(
        {"plugins": {"entries": {"roam": {"settings": {"mirror_sinks": ["discord-webhook"]}}}}}))
    from roam_core.mirror import config

    config._cache.clear()
    return url


def _sink(root: Path) -> DiscordWebhookSink:
    return DiscordWebhookSink({}, PluginContext(root, root / "roam", reader(root)))


def test_one_post_per_session_turns_appended(root: Path, server: DiscordServer,
                                             hook: str) -> None:
    Spool(root).append_many([_turn("a", 1), _turn("b", 1), _turn("a", 2)])
    result = Sender(root).drain_once()
    assert result.delivered == 3 and not result.errors, result.errors
    assert len(server.threads) == 2
    for thread in server.threads.values():
        starter = thread.messages[0]
        assert thread.name.startswith("Hook ") and "mirrored by roam" in starter["content"]
        assert all(m["allowed_mentions"] == {"parse": []} for m in thread.messages)
    a = next(t for t in server.threads.values() if t.name.startswith("Hook a"))
    assert [m["content"].split("\n")[1] for m in a.messages[1:]] == [
        "a q1 @everyone", "a q2 @everyone"]
    assert all(r["auth"] == "" for r in server.requests)  # no bot token anywhere
    token = hook.rsplit("/", 1)[1]
    state = (Spool(root).state_path.read_text()
             + (root / "state" / "session-mirror.json").read_text()
             + json.dumps(mirror_status(root)))
    assert token not in state and hook not in state


def test_a_locked_post_continues_and_a_deleted_webhook_stops(
        root: Path, server: DiscordServer, hook: str) -> None:
    sink = _sink(root)
    sink.deliver(_turn("a", 1))
    [first] = list(server.threads)
    server.lock_thread(first)
    sink.deliver(_turn("a", 2))
    second = next(t for t in server.threads.values() if t.id != first)
    assert "locked" in second.messages[0]["content"]
    assert second.name.startswith("Hook a (continued) · ")
    server.webhooks.clear()
    with pytest.raises(SinkTerminal, match="webhook does not exist") as raised:
        _sink(root).deliver(_turn("b", 1))
    assert hook not in str(raised.value) and hook.rsplit("/", 1)[1] not in str(raised.value)


def test_a_bad_url_is_a_clear_error_without_the_url(root: Path, server: DiscordServer) -> None:
    (root / ".env").write_text("ROAM_DISCORD_WEBHOOK_URL=https://example.com/not-a-hook-s3cr3t\n")
    with pytest.raises(SinkTerminal, match="not a Discord webhook URL") as raised:
        _sink(root).deliver(_turn("a", 1))
    assert "s3cr3t" not in str(raised.value)
    assert _sink(root).fingerprint() == "webhook|no-url"
