"""The Discord sinks (bot and webhook) pass the sink contract against the Discord-shaped server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.secrets import reader
from roam_core.testing.sink_contract import SinkContract
from roam_core.types import PluginContext
from roam_sink_discord.sink import DiscordSink
from roam_sink_discord.webhook import DiscordWebhookSink
from support.discord_server import DiscordServer

from .conftest import CHANNEL, TOKEN, make_sink


class DiscordHarness:
    secrets = (TOKEN,)

    def __init__(self, root: Path, server: DiscordServer) -> None:
        self.root, self.server = root, server

    def open(self) -> DiscordSink:
        return make_sink(self.root, self.server)

    def arrivals(self) -> dict[str, list[str]]:
        with self.server.lock:
            return {t.id: [m["content"] for m in t.messages]
                    for t in self.server.threads.values()}

    def fail_next(self, count: int) -> None:
        with self.server.lock:
            self.server.faults.clear()
        if count:
            self.server.inject(500, count=count)

    def set_down(self, down: bool) -> None:
        self.server.down = down


class TestDiscordSink(SinkContract):
    sink_name = "discord"

    @pytest.fixture
    def sink_harness(self, root: Path, server: DiscordServer) -> Iterator[DiscordHarness]:
        yield DiscordHarness(root, server)


class WebhookHarness(DiscordHarness):
    def __init__(self, root: Path, server: DiscordServer) -> None:
        super().__init__(root, server)
        server.forums.add(CHANNEL)
        self.url = server.add_webhook(CHANNEL)
        self.secrets = (self.url, self.url.rsplit("/", 1)[1])
        (root / ".env").write_text(f"ROAM_DISCORD_WEBHOOK_URL={self.url}\n")

    def open(self) -> DiscordWebhookSink:
        return DiscordWebhookSink({}, PluginContext(self.root, self.root / "roam",
                                                    reader(self.root)))


class TestDiscordWebhookSink(SinkContract):
    sink_name = "discord-webhook"

    @pytest.fixture
    def sink_harness(self, root: Path, server: DiscordServer) -> Iterator[WebhookHarness]:
        yield WebhookHarness(root, server)
