"""Backfill after live mirroring with the real Hermes 0.19: a turn's identity, not its text.

Hermes stores the turn in state.db (with its own masking of what looks like a secret); the
live hook saw the unmasked text. Backfill must recognise the turn by where it is in the
session (the user message's row), so a turn whose text held a secret is not posted twice.
"""

from __future__ import annotations

import re

import pytest

from support.discord_server import DiscordServer
from support.hermes_env import HomeFactory, hermes_homes, hermes_venv, stub_model  # noqa: F401
from support.stub_model import StubModel

from .test_e2e_hermes import CHANNEL, TOKEN, _ok, _wait

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

SECRETS = ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
           "ghp_0123456789abcdefghijABCDEFGHIJ012345")
#: A secret of no known shape: only the literal-secret filter catches it, once roam knows it.
SHAPELESS = "Zq8vT3kLm9wX2pR7Yt5uWb4n"


def test_backfill_after_live_turns_with_secrets_posts_nothing_twice(
        hermes_homes: HomeFactory, stub_model: StubModel) -> None:  # noqa: F811
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as server:
        home = hermes_homes.new("backfill-live")
        home.write_dotenv(ROAM_DISCORD_BOT_TOKEN=TOKEN)
        home.set_roam_settings(mirror_sinks=["discord"], discord_channel_id=CHANNEL,
                               discord_api_base=server.api_base)
        stub_model.queue_reply(f"Stored. Your key {SECRETS[0]} is noted.")
        first = _ok(home.chat(f"keep {SECRETS[0]} and {SECRETS[1]} for me"))
        session = re.search(r"\d{8}_\d{6}_[0-9a-f]{6}", first.stdout + first.stderr)
        assert session, first.stdout
        stub_model.queue_reply(f"The archive key will be {SHAPELESS}.")
        _ok(home.hermes("chat", "--resume", session.group(0), "-q", "and the other one?",
                        "-Q"))
        stub_model.queue_reply("Plain answer.")
        _ok(home.chat("a turn without secrets"))
        _ok(home.roam("mirror", "flush"))
        assert _wait(lambda: server.messages_total() == 3, 30), home.log_text()[-3000:]
        # The redaction changes after the turns went out: the text now masks differently.
        home.write_dotenv(ROAM_DISCORD_BOT_TOKEN=TOKEN, ROAM_ARCHIVE_KEY=SHAPELESS)

        backfill = _ok(home.roam("mirror", "backfill"))
        assert "0 spooled, 3 already mirrored" in backfill.stdout, backfill.stdout
        again = _ok(home.roam("mirror", "backfill"))
        assert "0 spooled, 3 already mirrored" in again.stdout, again.stdout
        assert server.messages_total() == 3
        everything = "".join(m["content"] + m.get("channel_id", "")
                             for m in server.all_messages())
        assert not any(secret in everything for secret in SECRETS)
