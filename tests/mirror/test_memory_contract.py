"""The reference memory sink passes the sink contract (the contract's own self-test)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from roam_core.mirror.memory import MemoryDestination, MemorySink
from roam_core.testing.sink_contract import SinkContract


class MemoryHarness:
    secrets = ("memory-secret",)

    def __init__(self) -> None:
        self.destination = MemoryDestination()

    def open(self) -> MemorySink:
        return MemorySink(self.destination)

    def arrivals(self) -> dict[str, list[str]]:
        return self.destination.arrivals()

    def fail_next(self, count: int) -> None:
        self.destination.fail_next = count

    def set_down(self, down: bool) -> None:
        self.destination.down = down


class TestMemorySink(SinkContract):
    skip: ClassVar[dict[str, list[str]]] = {
        "an in-process reference sink, not a plugin": [
            "test_the_sink_loads_through_its_entry_point"]}

    @pytest.fixture
    def sink_harness(self) -> MemoryHarness:
        return MemoryHarness()
