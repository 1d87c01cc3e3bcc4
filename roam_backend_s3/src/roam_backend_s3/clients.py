"""S3 clients (botocore) whose timeouts and retries fit the running operation's deadline.

botocore fixes timeouts per client, so the pool keeps one client with the normal settings
and, when an operation's remaining budget is shorter than one call could take, hands out a
client with tighter timeouts (cached by a coarse key, so only the tail of an operation
creates a few). An unreachable endpoint therefore fails within about 15 s with the real
error, and never past the operation's deadline.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from roam_backend_s3.config import Credentials, S3Settings
from roam_core.plugin import deadline as _deadline

CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 5.0
ATTEMPTS = 2
#: Connections per client: core reads and uploads in parallel on remote backends (up to 32
#: tree uploads at once); a pool smaller than that would open a fresh connection, an extra
#: round trip, for each request past it.
MAX_POOL = 32
#: The longest one call can hang with the normal settings: each attempt waits up to 1 s for
#: `100-continue` and then `READ_TIMEOUT` (or `CONNECT_TIMEOUT` when the connect hangs),
#: plus the standard retry mode's short backoff.
FULL_CALL_BUDGET = ATTEMPTS * (1.0 + READ_TIMEOUT) + 2.0
_GRAIN = 0.25
_CACHE_SIZE = 8


@dataclass(frozen=True)
class Timeouts:
    """One client's connect and read timeouts (seconds) and total attempts."""

    connect: float
    read: float
    attempts: int


NORMAL = Timeouts(CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS)


def _floor(value: float, low: float, high: float) -> float:
    return max(low, min(high, math.floor(value / _GRAIN) * _GRAIN))


def fit(remaining: float | None) -> Timeouts:
    """The timeouts for one call when `remaining` seconds are left (None: no deadline)."""
    if remaining is None or remaining >= FULL_CALL_BUDGET:
        return NORMAL
    attempts = ATTEMPTS if remaining >= 8.0 else 1
    per_attempt = remaining / attempts
    return Timeouts(connect=_floor(per_attempt - 0.5, _GRAIN, CONNECT_TIMEOUT),
                    read=_floor(per_attempt - 1.5, _GRAIN, READ_TIMEOUT),
                    attempts=attempts)


_loader: Any = None
_loader_lock = threading.Lock()


def _shared_loader() -> Any:
    """The botocore data loader every backend shares.

    Parsing S3's service model is most of what opening a backend costs, and the model
    never changes within a process: parse it once, not once per instance (processes that
    open many backends, such as the race tests, pay it once).
    """
    global _loader
    with _loader_lock:
        if _loader is None:
            from botocore.loaders import create_loader

            _loader = create_loader()
        return _loader


def _send_bodies_at_once(client: Any) -> None:
    """Stop botocore asking `Expect: 100-continue` before every PUT body.

    Waiting for the server's `100 Continue` costs a whole extra round trip per PUT, which
    nearly doubles a small object's upload on a distant store; it only pays for bodies a
    server might refuse before reading, and roam's objects are at most a pack.
    """
    from botocore.handlers import add_expect_header

    client.meta.events.unregister("before-call.s3", add_expect_header)


class ClientPool:
    """Thread-safe source of S3 clients for one backend instance."""

    def __init__(self, settings: S3Settings, credentials: Credentials | None) -> None:
        # botocore's session directly, not boto3's wrapper around it: boto3 adds only
        # resources and the transfer manager (s3transfer), which roam never uses and whose
        # imports cost more than botocore's own (most of a `roam status` on S3)
        import botocore.session

        self.settings = settings
        core = botocore.session.get_session()
        core.register_component("data_loader", _shared_loader())
        if credentials is not None:
            core.set_credentials(credentials.access_key_id, credentials.secret_access_key,
                                 credentials.session_token)
        if settings.region is not None:
            core.set_config_variable("region", settings.region)
        self._session = core
        self._lock = threading.Lock()
        self._cache: dict[Timeouts, Any] = {}

    def _config(self, timeouts: Timeouts) -> Any:
        from botocore.config import Config

        options: dict[str, Any] = {
            "connect_timeout": timeouts.connect,
            "read_timeout": timeouts.read,
            "retries": {"mode": "standard", "total_max_attempts": timeouts.attempts},
            "max_pool_connections": MAX_POOL,
        }
        if self.settings.custom_endpoint:
            # R2 and self-hosted servers: path-style URLs, and checksums only where S3
            # requires them (some S3-compatible services reject the newer default trailers;
            # roam authenticates every object itself anyway).
            options["s3"] = {"addressing_style": "path"}
            options["request_checksum_calculation"] = "when_required"
            options["response_checksum_validation"] = "when_required"
        return Config(**options)

    def get(self) -> Any:
        """A client whose worst-case call fits the current deadline (checked first)."""
        current = _deadline.current()
        remaining = None
        if current is not None:
            current.check()
            remaining = current.remaining()
        timeouts = fit(remaining)
        with self._lock:
            client = self._cache.get(timeouts)
            if client is None:
                # botocore sessions are not thread-safe; creating clients under the lock is.
                client = self._session.create_client(
                    "s3", endpoint_url=self.settings.endpoint_url,
                    config=self._config(timeouts))
                _send_bodies_at_once(client)
                self._cache[timeouts] = client
                if len(self._cache) > _CACHE_SIZE:
                    # Drop the oldest tight client (a thread using it keeps its reference).
                    oldest = next(key for key in self._cache if key != NORMAL)
                    del self._cache[oldest]
            return client

    def close(self) -> None:
        """Close every client's connections. Idempotent."""
        with self._lock:
            clients = list(self._cache.values())
            self._cache.clear()
        for client in clients:
            client.close()
