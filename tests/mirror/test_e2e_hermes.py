"""The mirror inside the real Hermes Agent 0.19: real turns, posts on the Discord-shaped server.

Each turn runs the real `hermes` binary (support.hermes_env) against the stub model; the
roam plugin's `post_llm_call` hook spools the turn and its sender thread posts it before the
process exits. A turn takes about 5 s, so the whole scenario is one test.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.discord_server import DiscordServer
from support.hermes_env import HermesHome, HomeFactory, hermes_homes, hermes_venv, stub_model  # noqa: F401
from support.stub_model import StubModel

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.e2e-token-not-real-0123456789"
CHANNEL = "100000000000000001"
LEAK = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def _ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _users(server: DiscordServer) -> list[str]:
    return [m["content"].split("\n")[1] for m in server.all_messages()
            if m["content"].startswith("**You**")]


def _hook_timings(home: HermesHome) -> list[float]:
    return [float(ms) for ms in re.findall(r"turn spooled in ([\d.]+) ms", home.log_text())]


def test_real_turns_are_mirrored_once_each(hermes_homes: HomeFactory,  # noqa: F811
                                           stub_model: StubModel) -> None:  # noqa: F811
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as server:
        home = hermes_homes.new("mirror")
        home.write_dotenv(ROAM_DISCORD_BOT_TOKEN=TOKEN)
        home.set_roam_settings(mirror_sinks=["discord"], discord_channel_id=CHANNEL,
                               discord_api_base=server.api_base)

        # 1. A turn with a secret and a mention: one thread, one post, redacted, no pings.
        stub_model.queue_reply(f"Sure. Your key {LEAK} is safe with me, @everyone.")
        _ok(home.chat(f"remember {LEAK} please @everyone"))
        assert _wait(lambda: server.messages_total() == 1, 30), home.log_text()[-3000:]
        [thread] = server.threads.values()
        assert thread.type == 11
        [post] = server.all_messages()
        assert LEAK not in post["content"] and LEAK not in thread.name
        assert post["allowed_mentions"] == {"parse": []}
        assert "remember" in post["content"] and "Sure." in post["content"]

        # 2. Discord down for the whole turn: the turn is not slowed, the post waits.
        server.stop()
        started = time.monotonic()
        _ok(home.oneshot("turn while discord is down"))
        down_seconds = time.monotonic() - started
        timings = _hook_timings(home)
        assert timings and max(timings) < 50, timings
        server.start()
        _ok(home.roam("mirror", "flush"))
        assert _wait(lambda: "turn while discord is down" in _users(server), 30)

        # 3. 429s and 5xx in between: nothing lost.
        server.inject(503, count=3)
        server.inject(429, retry_after=0.2, global_=True)
        _ok(home.oneshot("turn through errors"))
        flushed = home.roam("mirror", "flush")
        assert "turn through errors" in _users(server), flushed.stdout + flushed.stderr

        # 4. The sender killed mid-post (posted, not recorded), then a new process: no
        #    duplicate. `chat -q` exits normally, so its sender posts during the exit grace
        #    (`hermes -z` leaves with os._exit; its turns go with the next process or flush).
        server.hold_after_create = 120
        proc = subprocess.Popen([str(home.venv.hermes), "chat", "-q", "turn killed mid-post",
                                 "-Q"], cwd=home.workdir, env=home.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            assert server.message_created.wait(90), "the killed turn never posted"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
            server.hold_after_create = 0
            server.release.set()
        _ok(home.chat("turn after the crash"))
        assert _wait(lambda: "turn after the crash" in _users(server), 30)

        users = _users(server)
        for text in ("turn while discord is down", "turn through errors",
                     "turn killed mid-post", "turn after the crash"):
            assert users.count(text) == 1, users
        assert len(server.threads) == 5  # one per session: five turns, five sessions
        assert all(len(t.messages) == 1 for t in server.threads.values())
        status = _ok(home.roam("mirror", "status", "--json")).stdout
        assert '"pending": 0' in status
        everything = "".join(m["content"] for m in server.all_messages()) + status
        assert LEAK not in everything and TOKEN not in everything
        print(f"down turn took {down_seconds:.1f}s; hook timings (ms): {timings}")
        assert not (Path(home.path) / "roam" / "mirror" / "spool.jsonl").read_text().count(LEAK)
