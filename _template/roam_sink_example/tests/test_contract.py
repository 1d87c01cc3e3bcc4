"""The sink passes roam's sink contract as shipped: a harness, one fixture, done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from roam_core.plugin import SinkContract

from roam_sink_example.sink import WebhookSink
from webhook_server import WebhookServer

TOKEN = "example-webhook-token-not-real"


class WebhookHarness:
    """What the contract needs: open instances, read arrivals, make the destination fail."""

    secrets = (TOKEN,)

    def __init__(self, server: WebhookServer, state_dir: Path) -> None:
        self.server, self.state_dir = server, state_dir

    def open(self) -> WebhookSink:
        return WebhookSink(self.server.url, lambda: TOKEN, self.state_dir)

    def arrivals(self) -> dict[str, list[str]]:
        with self.server.lock:
            return {session: list(texts) for session, texts in self.server.posts.items()}

    def fail_next(self, count: int) -> None:
        with self.server.lock:
            self.server.failures = count

    def set_down(self, down: bool) -> None:
        with self.server.lock:
            self.server.down = down


class TestWebhookSink(SinkContract):
    skip: ClassVar[dict[str, list[str]]] = {}
    # The name the entry point registers: the suite loads the plugin through it, as roam does.
    sink_name = "example"

    @pytest.fixture
    def sink_harness(self, tmp_path: Path) -> Iterator[WebhookHarness]:
        with WebhookServer(TOKEN) as server:
            yield WebhookHarness(server, tmp_path / "roam")
