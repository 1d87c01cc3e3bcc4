"""Profile turns in the real Hermes 0.19: secrets of the root and the profile never reach Discord.

Issue 20, items 1 and 3. A turn in `hermes -p work` runs with the profile's own `.env` and
secret scope, which do not hold the root home's `ROAM_*` values; roam must still mask them
(it reads both `.env` files itself, for matching only) and must still find the bot token to
post live.
"""

from __future__ import annotations

import os

import pytest

from support.discord_server import DiscordServer
from support.hermes_env import HermesHome, HomeFactory, hermes_homes, hermes_venv, stub_model  # noqa: F401
from support.stub_model import StubModel

from .test_e2e_hermes import _ok, _wait

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.profile-token-not-real-012345"
CHANNEL = "100000000000000002"
#: A value of no known shape in the profile's own `.env`.
PROFILE_VALUE = "qZ7vN2pLx9Rt4WmK8sHd"


def _logs(home: HermesHome) -> str:
    logs = home.path / "profiles" / "work" / "logs"
    return home.log_text() + "".join(p.read_text(errors="replace") for p in logs.glob("*.log"))


def _profile_home(factory: HomeFactory, server: DiscordServer) -> tuple[HermesHome, str]:
    home = factory.new("profiles")
    key = os.urandom(32).hex()
    home.write_dotenv(ROAM_ARCHIVE_KEY=key, ROAM_DISCORD_BOT_TOKEN=TOKEN,
                      TERMINAL_ENV="local")
    home.set_roam_settings(mirror_sinks=["discord"], discord_channel_id=CHANNEL,
                           discord_api_base=server.api_base)
    _ok(home.hermes("profile", "create", "work", "--clone", "--no-alias"))
    (home.path / "profiles" / "work" / ".env").write_text(
        f"WEATHER_API_KEY={PROFILE_VALUE}\nTERMINAL_ENV=local\n")
    return home, key


def test_profile_turn_never_posts_root_or_profile_secrets(
        hermes_homes: HomeFactory, stub_model: StubModel) -> None:  # noqa: F811
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as server:
        home, key = _profile_home(hermes_homes, server)
        stub_model.queue_reply(f"Noted {key} and {PROFILE_VALUE} and {TOKEN}; running local.")
        _ok(home.hermes("-p", "work", "chat", "-q",
                        f"keep {key} and {PROFILE_VALUE} for me, env local", "-Q"))
        # Whatever the profile process managed, a flush from the default profile delivers.
        _ok(home.roam("mirror", "flush"))
        assert _wait(lambda: server.messages_total() >= 1, 30), home.log_text()[-3000:]
        posted = "\n".join(m["content"] for m in server.all_messages())
        names = "\n".join(t.name for t in server.threads.values())
        for secret in (key, PROFILE_VALUE, TOKEN):
            assert secret not in posted and secret not in names, (secret, posted, names)
        assert "[REDACTED]" in posted
        assert "local" in posted  # a short ordinary value stays readable
        spool = (home.path / "roam" / "mirror" / "spool.jsonl").read_text()
        assert key not in spool and PROFILE_VALUE not in spool


def test_profile_turn_is_posted_live(hermes_homes: HomeFactory,  # noqa: F811
                                     stub_model: StubModel) -> None:  # noqa: F811
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as server:
        home, _key = _profile_home(hermes_homes, server)
        stub_model.queue_reply("profile reply")
        _ok(home.hermes("-p", "work", "chat", "-q", "profile turn live", "-Q"))
        # No flush: the profile process's own sender posted it before exiting.
        assert _wait(lambda: server.messages_total() == 1, 10), _logs(home)[-3000:]
        assert "profile turn live" in server.all_messages()[0]["content"]
        assert "is not set" not in _logs(home)
