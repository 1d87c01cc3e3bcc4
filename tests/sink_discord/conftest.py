from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.mirror import config as mirror_config
from roam_core.mirror import redact
from roam_core.secrets import reader
from roam_core.types import PluginContext
from roam_sink_discord.client import DiscordClient
from roam_sink_discord.sink import DiscordSink
from support.discord_server import DiscordServer

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.test-token-not-real-0123456789"
CHANNEL = "100000000000000001"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("ROAM_ARCHIVE_KEY", "ROAM_DISCORD_BOT_TOKEN", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    redact.set_hermes_redactor(lambda text: text.replace("HERMES-ONLY-SECRET", "[h]"))
    mirror_config._cache.clear()
    yield
    redact.set_hermes_redactor(None, explicit=False)
    mirror_config._cache.clear()


@pytest.fixture
def server() -> Iterator[DiscordServer]:
    with DiscordServer(token=TOKEN, channels={CHANNEL}) as running:
        yield running


@pytest.fixture
def root(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    (home / ".env").write_text(f"ROAM_DISCORD_BOT_TOKEN={TOKEN}\n")
    return home


def settings(server: DiscordServer, **extra: object) -> dict[str, object]:
    return {"mirror_sinks": ["discord"], "discord_channel_id": CHANNEL,
            "discord_api_base": server.api_base, **extra}


def write_config(root: Path, server: DiscordServer, **extra: object) -> None:
    import yaml

    data = {"plugins": {"entries": {"roam": {"settings": settings(server, **extra)}}}}
    (root / "config.yaml").write_text(yaml.safe_dump(data))
    mirror_config._cache.clear()


def make_sink(root: Path, server: DiscordServer, max_wait: float = 10.0,
              sleeps: list[float] | None = None) -> DiscordSink:
    context = PluginContext(home=root, state_dir=root / "roam", secret=reader(root))
    sink = DiscordSink(settings(server), context)
    import time

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        time.sleep(seconds)

    sink.client = DiscordClient(sink.api_base, sink._token, max_wait=max_wait, sleep=sleep)
    return sink
