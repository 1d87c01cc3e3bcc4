"""An in-memory sink: the reference implementation core's tests and `SinkContract` use."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from roam_core.hookspecs import hookimpl
from roam_core.mirror.events import TurnEvent
from roam_core.mirror.sink import Receipt, SinkRetry, SinkTerminal
from roam_core.types import PluginContext, SinkPlugin


@dataclass
class MemoryDestination:
    """What arrived, per session, plus switches that make the destination misbehave."""

    posts: dict[str, list[str]] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)
    fail_next: int = 0
    down: bool = False
    refuse: bool = False
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arrivals(self) -> dict[str, list[str]]:
        with self.lock:
            return {key: list(texts) for key, texts in self.posts.items()}


class MemorySink:
    """Delivers into a `MemoryDestination`, idempotently by event id."""

    name = "memory"

    def __init__(self, destination: MemoryDestination, label: str = "memory") -> None:
        self.destination = destination
        self.label = label

    def deliver(self, event: TurnEvent) -> Receipt:
        destination = self.destination
        with destination.lock:
            destination.calls += 1
            if destination.refuse:
                raise SinkTerminal("the memory destination refuses this configuration")
            if destination.down:
                raise SinkRetry("the memory destination is down")
            if destination.fail_next > 0:
                destination.fail_next -= 1
                raise SinkRetry("injected transient failure", retry_after=0.0)
            if event.event_id not in destination.seen:
                text = f"{event.user_message}\n{event.reply}"
                destination.posts.setdefault(event.session_key, []).append(text)
                destination.seen[event.event_id] = event.session_key
        return Receipt(sink=self.name, event_id=event.event_id, reference=event.session_key)

    def fingerprint(self) -> str:
        return f"memory:{self.label}"

    def close(self) -> None:
        pass


class MemorySinkPlugin:
    """A plugin object registering a memory sink (`manager.register(plugin, "memory")`)."""

    def __init__(self, destination: MemoryDestination | None = None) -> None:
        self.destination = destination or MemoryDestination()

    def _factory(self, settings: Mapping[str, Any], context: PluginContext) -> MemorySink:
        return MemorySink(self.destination)

    @hookimpl
    def roam_session_sinks(self) -> Iterator[SinkPlugin]:
        yield SinkPlugin(name="memory", summary="keeps turns in memory (tests)",
                         factory=self._factory)
