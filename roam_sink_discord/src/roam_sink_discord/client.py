"""A small Discord REST client: bot auth, rate-limit buckets, 429s and retries.

httpx is imported here only, when a sink is first used. Buckets are learned from the
`X-RateLimit-*` headers (never hard-coded): before a request the client waits for its
route's bucket to reset, and on a 429 it sleeps `retry_after` (pausing every request when
the limit is global). Waits longer than `max_wait` are handed back to the sender as
`SinkRetry` so the spool, not a sleeping thread, carries the delay.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roam_core.plugin import SinkRejected, SinkRetry, SinkTerminal

USER_AGENT = "DiscordBot (roam-sink-discord, 0.1.0)"
MAX_ATTEMPTS = 5
#: Longest wait an answer may ask for; anything longer (or not a number) is not believed.
MAX_RETRY_AFTER = 3600.0
#: Discord's error code for a request on an archived thread.
ARCHIVED_THREAD = 50083


class MaybeSent(SinkRetry):
    """A non-idempotent request may have reached Discord, but no answer says what it did.

    `answered` is False when no answer came at all (a timeout, a dropped connection): the
    request may still be carried out later, so what it creates can appear after a lookup.
    """

    def __init__(self, message: str, answered: bool = True) -> None:
        super().__init__(message)
        self.answered = answered


class Forbidden(SinkTerminal):
    """A 403. Terminal for the channel; for a post into a thread, the thread may be locked."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class ThreadArchived(SinkRejected):
    """A 400 with code 50083: the thread is archived (and locked) and refuses the request."""


class NotFound(Exception):
    """The resource (channel or thread) does not exist: a 404."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Bucket:
    remaining: int
    reset_at: float


def _seconds(value: Any) -> float | None:
    """A wait in seconds from a header or body: finite, at least 0, at most an hour."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _error_message(body: Any) -> str:
    if isinstance(body, dict):
        text = str(body.get("message") or "")
        code = body.get("code")
        return f"{text} (code {code})" if code else text
    return ""


class DiscordClient:
    """Sends JSON requests to one Discord API base with one bot token."""

    def __init__(self, api_base: str, token: Callable[[], str], *, timeout: float = 15.0,
                 max_wait: float = 10.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api_base = api_base.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.max_wait = max_wait
        self.sleep = sleep
        self.clock = clock
        self._http: Any = None
        self._lock = threading.Lock()
        self._route_buckets: dict[str, str] = {}
        self._buckets: dict[str, _Bucket] = {}
        self._global_until = 0.0

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _client(self) -> Any:
        if self._http is None:
            import httpx

            self._http = httpx.Client(
                timeout=httpx.Timeout(self.timeout, connect=min(5.0, self.timeout)),
                headers={"User-Agent": USER_AGENT})
        return self._http

    # -- rate limits ---------------------------------------------------------------------

    def _bucket_key(self, route: str, major: str) -> str:
        return f"{self._route_buckets.get(route, route)}:{major}"

    def _wait_before(self, route: str, major: str) -> None:
        now = self.clock()
        wait = max(0.0, self._global_until - now)
        scope = "global " if wait else ""
        bucket = self._buckets.get(self._bucket_key(route, major))
        if bucket is not None and bucket.remaining <= 0 and bucket.reset_at > now \
                and bucket.reset_at - now > wait:
            wait, scope = bucket.reset_at - now, ""
        if wait > self.max_wait:
            raise SinkRetry(f"Discord {scope}rate limit: retry in {wait:.1f}s", retry_after=wait)
        if wait > 0:
            self.sleep(wait)

    def _learn(self, route: str, major: str, headers: Any) -> None:
        bucket_id = headers.get("x-ratelimit-bucket")
        if bucket_id:
            self._route_buckets[route] = bucket_id
        remaining = headers.get("x-ratelimit-remaining")
        reset_after = headers.get("x-ratelimit-reset-after")
        if remaining is None or reset_after is None:
            return
        wait = _seconds(reset_after)
        try:
            left = int(float(remaining))
        except (ValueError, OverflowError):
            return
        if wait is not None:
            self._buckets[self._bucket_key(route, major)] = _Bucket(left, self.clock() + wait)

    def _on_429(self, route: str, major: str, headers: Any, body: Any) -> tuple[float, bool]:
        retry_after = None
        if isinstance(body, dict) and body.get("retry_after") is not None:
            retry_after = _seconds(body["retry_after"])
        if retry_after is None and headers.get("retry-after"):
            retry_after = _seconds(headers["retry-after"])
        retry_after = retry_after if retry_after is not None else 1.0
        is_global = (isinstance(body, dict) and bool(body.get("global"))) or \
            str(headers.get("x-ratelimit-global", "")).lower() == "true"
        until = self.clock() + retry_after
        if is_global:
            self._global_until = max(self._global_until, until)
        else:
            key = self._bucket_key(route, major)
            self._buckets[key] = _Bucket(0, until)
        return retry_after, is_global

    # -- requests ------------------------------------------------------------------------

    def request(self, method: str, route: str, major: str, path: str,
                payload: dict[str, Any] | None = None, *, idempotent: bool = True) -> Any:
        """Send one request (`route` like "POST /channels/{id}/messages") and return JSON.

        With `idempotent=False` (creating a thread, which has no nonce) a request that may
        have reached Discord (a 5xx or a lost answer) is not sent again here: a resend could
        create a second thread, so `MaybeSent` tells the caller to look for the first one.
        """
        import httpx

        token = self._token()
        url = f"{self.api_base}{path}"
        last_error = "no attempt made"
        for attempt in range(MAX_ATTEMPTS):
            with self._lock:
                self._wait_before(route, major)
            try:
                response = self._client().request(  # a webhook's URL is its credential
                    method, url, json=payload,
                    headers={"Authorization": f"Bot {token}"} if token else {})
            except httpx.HTTPError as error:
                last_error = f"cannot reach Discord: {type(error).__name__}"
                if not idempotent and not isinstance(error, httpx.ConnectError):
                    raise MaybeSent(last_error, answered=False) from None
                if isinstance(error, httpx.ConnectError) or attempt >= 2:
                    break  # refused or unresolvable: the spool's backoff waits, not us
                self.sleep(0.5 * 2 ** attempt)
                continue
            body = self._json(response)
            with self._lock:
                self._learn(route, major, response.headers)
            status = response.status_code
            if status < 300:
                return body
            if status == 429:
                with self._lock:
                    retry_after, is_global = self._on_429(route, major, response.headers, body)
                scope = "global " if is_global else ""
                last_error = f"Discord {scope}rate limit (429), retry after {retry_after:.2f}s"
                if retry_after > self.max_wait:
                    raise SinkRetry(last_error, retry_after=retry_after)
                continue
            if status >= 500:
                last_error = f"Discord server error ({status})"
                if not idempotent:
                    raise MaybeSent(last_error)
                if attempt >= 2:
                    break
                self.sleep(0.5 * 2 ** attempt)
                continue
            self._raise_for(status, body, path)
        raise SinkRetry(last_error)

    @staticmethod
    def _json(response: Any) -> Any:
        try:
            return response.json()
        except (ValueError, json.JSONDecodeError):
            return None

    @staticmethod
    def _raise_for(status: int, body: Any, path: str) -> None:
        detail = _error_message(body)
        if status == 401:
            raise SinkTerminal("Discord refused the bot token (401 Unauthorized); "
                               "check ROAM_DISCORD_BOT_TOKEN")
        code = body.get("code") if isinstance(body, dict) else None
        if status == 403:
            raise Forbidden(
                f"Discord denied access (403 Forbidden{': ' + detail if detail else ''}); the bot "
                "needs View Channel, Create Public Threads and Send Messages in Threads",
                code if isinstance(code, int) else None)
        if status == 404:
            raise NotFound(detail or f"not found: {path}", code if isinstance(code, int) else None)
        if status == 400 and code == ARCHIVED_THREAD:
            raise ThreadArchived(f"Discord refused the request: the thread is archived ({detail})")
        suffix = f": {detail[:200]}" if detail else ""
        raise SinkRejected(f"Discord rejected the request ({status}){suffix}")
