"""`WebhookSink`: one JSON POST per turn, idempotent by event id, failures classified.

The duties come from `roam_core.mirror.sink`: deliver each redacted event at most once per
destination, fail only with `SinkRetry` (try later), `SinkTerminal` (this configuration is
refused) or `SinkRejected` (this one event is refused), bound every call in time, and never
put a credential in a fingerprint or a message. The webhook URL itself may be a secret (many
services put a token in it), so messages name only its host.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from roam_core.plugin import Receipt, SinkRejected, SinkRetry, SinkTerminal, TurnEvent

NAME = "example"
#: Seconds one POST may take; the sender calls again later if it times out.
TIMEOUT = 10.0
#: Event ids remembered, to answer a redelivery without posting twice.
REMEMBER = 1000


class WebhookSink:
    """POSTs `{"event_id", "session", "title", "text", "time"}` to one URL."""

    name = NAME

    def __init__(self, url: str, token: Callable[[], str | None], state_dir: Path) -> None:
        self.url = url
        self.host = urlsplit(url).hostname or "the webhook"
        self._token = token
        self.record = Path(state_dir) / "example-sink" / "delivered.json"

    # -- the delivered record: shared by every instance and process on this home -----------

    @contextlib.contextmanager
    def _delivered(self) -> Iterator[list[str]]:
        self.record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.record.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                ids = json.loads(self.record.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                ids = []
            before = list(ids)
            yield ids
            if ids != before:
                temp = self.record.with_suffix(".tmp")
                temp.write_text(json.dumps(ids[-REMEMBER:]), encoding="utf-8")
                os.replace(temp, self.record)
        finally:
            os.close(fd)  # also releases the lock

    # -- delivery ------------------------------------------------------------------------

    def deliver(self, event: TurnEvent) -> Receipt:
        with self._delivered() as ids:
            if event.event_id in ids:
                return Receipt(sink=NAME, event_id=event.event_id, reference=event.session_key)
            self._post(event)
            ids.append(event.event_id)
        return Receipt(sink=NAME, event_id=event.event_id, reference=event.session_key)

    def _post(self, event: TurnEvent) -> None:
        body = json.dumps({
            "event_id": event.event_id, "session": event.session_key,
            "title": event.title or event.session_id, "time": event.time,
            "text": f"You: {event.user_message}\n\nHermes: {event.reply}",
        }).encode("utf-8")
        headers = {"Content-Type": "application/json", "Idempotency-Key": event.event_id}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token.strip()}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                response.read()
        except urllib.error.HTTPError as error:
            raise self._classify(error.code, error.headers) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", None) or type(error).__name__
            raise SinkRetry(f"{self.host} is unreachable: {reason}") from None

    def _classify(self, status: int, headers: Any) -> SinkRetry | SinkTerminal | SinkRejected:
        if status in (401, 403, 404):
            return SinkTerminal(f"{self.host} refused this configuration (HTTP {status}); "
                                "check example_webhook_url and ROAM_EXAMPLE_WEBHOOK_TOKEN")
        if status == 429 or status >= 500:
            try:
                after = float(headers.get("Retry-After") or "") if headers else None
            except ValueError:
                after = None
            return SinkRetry(f"{self.host} answered HTTP {status}", retry_after=after)
        return SinkRejected(f"{self.host} refused this turn (HTTP {status})")

    def fingerprint(self) -> str:
        token = self._token() or ""
        digest = hashlib.sha256(f"{self.url}\0{token}".encode()).hexdigest()[:16]
        return f"{NAME}:{self.host}:{digest}"

    def close(self) -> None:
        return None
