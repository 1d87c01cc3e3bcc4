"""The sink object protocol: what a `SinkPlugin.factory` returns, and how it may fail.

A sink is an observer. The sender calls it from a background thread, one event at a time,
in spool order per session; it never runs on the agent's thread. Its duties:

- `deliver(event)` posts one redacted `TurnEvent` and returns a `Receipt`. It MUST be
  idempotent by `event.event_id`: delivering an event again (after a crash between "posted"
  and "recorded", or from a new process) must not show it twice at the destination.
- It MUST fail only with the `SinkError` subclasses below, so the sender knows whether
  to retry later (`SinkRetry`; `SessionRetry` when only this session must wait), stop
  using this configuration (`SinkTerminal`) or set this one event aside
  (`SinkRejected`, which holds back only this session's later events until given up).
  Anything else escaping is a bug; the sender isolates it and treats it as a retry.
- It MUST bound every call in time (it may sleep for a rate limit, within its own limits).
- `fingerprint()` names the configuration (destination and credential identity, never the
  credential itself) so a terminal failure is remembered only for that configuration.
- `close()` releases connections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from roam_core.errors import RoamError
from roam_core.mirror.events import TurnEvent


class SinkError(RoamError):
    """A sink could not deliver an event."""


class SinkRetry(SinkError):
    """A transient failure (network, 5xx, rate limit, secret not in scope): try again later.

    `retry_after` is the earliest sensible retry in seconds, when the destination said so.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SessionRetry(SinkRetry):
    """A transient failure of one session's destination (its thread): only that session waits.

    The sender keeps delivering the other sessions' events and tries this session again on
    a later pass.
    """


class SinkTerminal(SinkError):
    """The configuration itself is refused: stop using it until settings or credentials change.

    Bad credentials, a missing permission or a channel that does not exist.
    """


class SinkRejected(SinkError):
    """The destination refuses this one event; the others may still go."""


@dataclass(frozen=True)
class Receipt:
    """What a sink reports after delivering an event."""

    sink: str
    event_id: str
    reference: str = ""
    parts: int = 1
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"sink": self.sink, "event_id": self.event_id, "reference": self.reference,
                "parts": self.parts, "details": self.details}


@runtime_checkable
class Sink(Protocol):
    """The object a sink plugin's factory returns."""

    name: str

    def deliver(self, event: TurnEvent) -> Receipt:
        """Deliver one redacted event, idempotently by `event.event_id`."""
        ...

    def fingerprint(self) -> str:
        """A stable, secret-free name of this configuration."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...
