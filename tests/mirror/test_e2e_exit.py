"""A `hermes chat -q` turn exits within 0.5 s of its end whatever Discord does.

The spool makes the turn durable before the hook returns, so the process does not wait
for Discord at exit; what is unsent is delivered by the next process or `mirror flush`.
roam's own hold on the exit is what its sender logs; the wall time from the turn's end to
the process's exit is compared with the same home's exit with the mirror off (Hermes's own
shutdown takes seconds on a loaded machine, and varies).
"""

from __future__ import annotations

import pytest

from support.discord_server import DiscordServer
from support.exit_timing import exit_delay, exit_holds
from support.hermes_env import HomeFactory, hermes_homes, hermes_venv, stub_model  # noqa: F401
from support.stub_model import StubModel

from .test_e2e_hermes import CHANNEL, TOKEN, _ok, _users, _wait

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

BOUND = 0.5
#: Run-to-run noise of Hermes's own exit on a machine shared with other test runs (seen: up
#: to 1.7 s between two single turns); the precise bound is the sender's own let-go time.
NOISE = 1.5


def test_exit_does_not_wait_for_a_hung_or_rate_limiting_discord(
        hermes_homes: HomeFactory, stub_model: StubModel) -> None:  # noqa: F811
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as server:
        home = hermes_homes.new("exit")
        home.write_dotenv(ROAM_DISCORD_BOT_TOKEN=TOKEN)
        home.set_roam_settings(mirror_sinks=[], discord_channel_id=CHANNEL,
                               discord_api_base=server.api_base)
        off = exit_delay(home, "a turn with the mirror off")
        home.set_roam_settings(mirror_sinks=["discord"], discord_channel_id=CHANNEL,
                               discord_api_base=server.api_base)
        server.late(600, count=1000)  # every request hangs
        hung = exit_delay(home, "turn while discord hangs")
        server.lates.clear()
        server.inject(429, count=1000, retry_after=5, global_=True)  # slept inside a request
        limited = exit_delay(home, "turn while discord rate-limits")
        server.faults.clear()
        holds = exit_holds(home)
        assert len(holds) == 2 and max(holds) <= BOUND, holds
        assert hung - off < BOUND + NOISE and limited - off < BOUND + NOISE, (off, hung, limited)
        _ok(home.roam("mirror", "flush"))
        assert _wait(lambda: {"turn while discord hangs", "turn while discord rate-limits"}
                     <= set(_users(server)), 30)
