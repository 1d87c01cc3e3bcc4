"""The Discord sink passes the sink contract against the Discord-shaped server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.testing.sink_contract import SinkContract
from roam_sink_discord.sink import DiscordSink
from support.discord_server import DiscordServer

from .conftest import TOKEN, make_sink


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
