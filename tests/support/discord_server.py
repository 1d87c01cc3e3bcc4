"""A Discord-shaped REST server on 127.0.0.1 that enforces what Discord enforces.

Serves the routes the mirror uses under `/api/v10` (creating threads and messages; GET of
a channel, of a guild's active threads, of a channel's archived public threads and of a
thread's messages; DELETE of a thread, for tests), on a real socket, port 0, in a daemon
thread::

    with DiscordServer(token="t0k", channels={"111"}) as server:
        base = server.api_base                       # http://127.0.0.1:PORT/api/v10
        server.inject(status=500, count=2)           # next two requests fail
        server.inject(status=429, retry_after=0.2, global_=True)
        ...
        server.threads, server.messages_in(thread_id), server.requests

What it enforces (a request breaking a rule gets Discord's status and error shape):

- `Authorization: Bot <token>` else 401 (code 0, "401: Unauthorized"); a channel in
  `forbidden` answers 403 (code 50001 "Missing Access").
- `POST /channels/{channel}/threads`: the channel must exist (404, code 10003); `name`
  1–100 characters, `auto_archive_duration` one of 60/1440/4320/10080, and `type` must be
  11 (public; stricter than Discord, which would silently make a private thread).
- `POST /channels/{thread}/messages`: the thread must exist (404, code 10003 "Unknown
  Channel"); `content` 1–2000 characters; `allowed_mentions` must be present and must not
  parse anything (stricter than Discord, which would parse mentions from content); `nonce`
  a string of at most 25 characters or an integer; with `enforce_nonce` a repeated nonce
  within `nonce_window` seconds returns the first message and creates nothing.
- `GET /channels/{id}`: a channel (with `guild_id`) or a thread (with `parent_id`), else
  404 (code 10003). `GET /guilds/{guild}/threads/active`: the guild's unarchived threads
  (`{"threads", "members"}`), 404 (code 10004 "Unknown Guild") for another guild.
  `GET /channels/{channel}/threads/archived/public`: the channel's archived public threads
  (`{"threads", "members", "has_more"}`), 404 for an unknown channel.
- Rate limits per bucket (route + channel): `bucket_limit` requests per `bucket_window`
  seconds, announced in `X-RateLimit-Limit/-Remaining/-Reset/-Reset-After/-Bucket`; a
  request over the limit gets 429 `{"message", "retry_after", "global": false}` with
  `X-RateLimit-Scope: user` and `Retry-After`. `global_limit` requests per second overall
  answer a global 429 (`X-RateLimit-Global: true`).
- Injected faults (`inject`): any status (5xx, 401, 403, 429 with `retry_after` and
  `global_`) for the next `count` matching requests, optionally delayed.
- `down = True`: every connection is closed without an answer; `stop()` then `start()`
  frees and re-binds the same port (the outage a turn must not feel).
- `fail_thread_answer`: a status (e.g. 500) answered for the next thread creation *after*
  the thread was stored (Discord made it, the answer was lost); `hold_after_thread` holds
  that answer like `hold_after_create` and sets `thread_created`.
- `hold_after_create`: seconds to wait after a message was stored and before answering
  (a sender killed in that window has "posted but not recorded"); `message_created` is
  set when such a hold starts and `release` ends every hold early.
- Per-thread refusals, as Discord answers them: `lock_thread(id)` makes posts into that
  thread answer 403 (code 50013 "Missing Permissions": a locked thread refuses a bot
  without Manage Threads); `archive_thread(id)` archives it (a post unarchives it, as on
  Discord) and with `locked=True` posts answer 400 (code 50083 "Thread is archived");
  `delete_thread(id)` makes it answer 404 (code 10003).
- `late(seconds, method=, path_contains=, count=)`: the next matching requests are held
  `seconds` *before* they are carried out, so a client that gave up waiting still gets
  the effect (a thread created after the client's timeout).
- Forum channels (`forums`, type 15): a thread (a forum post) is created with its first
  message (`"message": {"content", "allowed_mentions"}` required, same rules as a post);
  the starter message's id is the thread's id, as on Discord.
- Webhooks (`add_webhook(channel)` returns its secret URL): `POST /webhooks/{id}/{token}`
  needs no bot token; `?wait=true` answers the message; `thread_name` (forum channels
  only) creates a post with the message as its first, `thread_id` appends to a thread of
  the webhook's channel (404 code 10003 if gone, the thread's refusals as for a post);
  a wrong token or id answers 404 code 10015 "Unknown Webhook".
- `PATCH /channels/{thread}` with `{"name"}` renames a thread (1–100 characters); renames
  are counted in `renames`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

API_PREFIX = "/api/v10"
ARCHIVE_DURATIONS = {60, 1440, 4320, 10080}
PUBLIC_THREAD = 11


@dataclass
class Fault:
    status: int
    count: int = 1
    method: str | None = None
    path_contains: str | None = None
    retry_after: float = 0.1
    global_: bool = False
    delay: float = 0.0

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path_contains is None or self.path_contains in path)


@dataclass
class Thread:
    id: str
    name: str
    parent_id: str
    type: int
    archived: bool = False
    locked: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client was killed while we held its answer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        owner = self.server.owner
        if owner.down:  # hang up without an answer, as an unreachable host would
            self.close_connection = True
            return
        status, body, headers = owner.handle(
            self.command, self.path, dict(self.headers.items()), raw)
        self._reply(status, body, headers)

    do_GET = do_POST = do_DELETE = do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: DiscordServer


class DiscordServer:
    """The server, its recorded state and the knobs tests turn."""

    def __init__(self, token: str = "test-bot-token", channels: set[str] | None = None, *,
                 bucket_limit: int = 5, bucket_window: float = 1.0, global_limit: int = 50,
                 nonce_window: float = 300.0, guild: str = "300000000000000003") -> None:
        self.token = token
        self.guild = guild
        self.fail_thread_answer = 0
        self.hold_after_thread = 0.0
        self.thread_created = threading.Event()
        self.channels = set(channels or {"100000000000000001"})
        self.forums: set[str] = set()
        self.webhooks: dict[str, tuple[str, str]] = {}
        self.forbidden: set[str] = set()
        self.bucket_limit = bucket_limit
        self.bucket_window = bucket_window
        self.global_limit = global_limit
        self.nonce_window = nonce_window
        self.hold_after_create = 0.0
        self.release = threading.Event()
        self.down = False
        self._port = 0
        self.threads: dict[str, Thread] = {}
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.lates: list[Fault] = []
        self.renames: list[tuple[str, str]] = []
        self.lock = threading.RLock()
        self._ids = itertools.count(1_200_000_000_000_000_000)
        self._nonces: dict[str, tuple[float, dict[str, Any], str]] = {}
        self._buckets: dict[str, list[float]] = {}
        self._global: list[float] = []
        self.message_created = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> DiscordServer:
        """Listen on a fresh port, or on the previous one after `stop()` (a restart)."""
        self._httpd = _Server(("127.0.0.1", self._port), _Handler)
        self._port = self._httpd.server_address[1]
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True, name="discord-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> DiscordServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    # -- knobs and views -----------------------------------------------------------------

    def inject(self, status: int, count: int = 1, **kwargs: Any) -> None:
        with self.lock:
            self.faults.append(Fault(status, count, **kwargs))

    def late(self, seconds: float, count: int = 1, **kwargs: Any) -> None:
        """Hold the next `count` matching requests `seconds` before carrying them out."""
        with self.lock:
            self.lates.append(Fault(0, count, delay=seconds, **kwargs))

    def add_webhook(self, channel: str, token: str = "wh-SECRET-token-0123456789") -> str:
        """A webhook of `channel`; returns its URL (a secret: it is the credential)."""
        with self.lock:
            webhook_id = self._next_id()
            self.webhooks[webhook_id] = (token, channel)
        return f"http://127.0.0.1:{self.port}{API_PREFIX}/webhooks/{webhook_id}/{token}"

    def lock_thread(self, thread_id: str) -> None:
        with self.lock:
            self.threads[thread_id].locked = True

    def archive_thread(self, thread_id: str, locked: bool = False) -> None:
        with self.lock:
            self.threads[thread_id].archived = True
            self.threads[thread_id].locked = locked

    def delete_thread(self, thread_id: str) -> None:
        with self.lock:
            self.threads.pop(thread_id, None)

    def messages_in(self, thread_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.threads[thread_id].messages)

    def all_messages(self) -> list[dict[str, Any]]:
        with self.lock:
            return [m for t in self.threads.values() for m in t.messages]

    def wait_for_messages(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.all_messages()
            if len(found) >= count:
                return found
            time.sleep(0.05)
        return self.all_messages()

    def statuses(self) -> list[int]:
        with self.lock:
            return [r["status"] for r in self.requests]

    # -- request handling ----------------------------------------------------------------

    def _next_id(self) -> str:
        return str(next(self._ids))

    def _rate_headers(self, bucket: str, used: list[float], now: float) -> dict[str, str]:
        reset_after = max(0.0, (used[0] + self.bucket_window - now) if used else 0.0)
        return {
            "X-RateLimit-Limit": str(self.bucket_limit),
            "X-RateLimit-Remaining": str(max(0, self.bucket_limit - len(used))),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": bucket.split(":")[0],
        }

    def handle(self, method: str, path: str, headers: dict[str, str],
               raw: bytes) -> tuple[int, Any, dict[str, str]]:
        now = time.monotonic()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = "<invalid json>"
        record: dict[str, Any] = {"method": method, "path": path, "json": payload,
                                  "auth": headers.get("Authorization", ""), "at": time.time()}
        with self.lock:
            late = next((f for f in self.lates if f.count > 0 and f.matches(method, path)),
                        None)
            if late is not None:
                late.count -= 1
        if late is not None:
            time.sleep(late.delay)  # the client may have given up; the effect still happens
            now = time.monotonic()
        status, body, extra = self._route(method, path, headers, payload, now)
        record["status"] = status
        with self.lock:
            self.requests.append(record)
        if status == 201 and method == "POST" and path.endswith("/threads"):
            if self.hold_after_thread:
                self.thread_created.set()
                self.release.wait(self.hold_after_thread)  # created, the client has no answer
            with self.lock:
                if self.fail_thread_answer:
                    status, body = self.fail_thread_answer, {"message": "injected", "code": 0}
                    self.fail_thread_answer = 0
                    record["status"] = status
        if status == 200 and method == "POST" and path.endswith("/messages") \
                and self.hold_after_create:
            self.message_created.set()
            self.release.wait(self.hold_after_create)  # "posted", the client has no answer
        return status, body, extra

    def _route(self, method: str, path: str, headers: dict[str, str], payload: Any,
               now: float) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            for fault in self.faults:
                if fault.count > 0 and fault.matches(method, path):
                    fault.count -= 1
                    if fault.delay:
                        time.sleep(fault.delay)
                    return self._fault(fault)
            self.faults = [f for f in self.faults if f.count > 0]
        hook = re.fullmatch(rf"{API_PREFIX}/webhooks/(\d+)/([^/?]+)(\?.*)?", path)
        if hook is not None and method == "POST":
            with self.lock:
                return self._execute_webhook(hook.group(1), hook.group(2),
                                             parse_qs((hook.group(3) or "?")[1:]), payload, now)
        if headers.get("Authorization") != f"Bot {self.token}":
            return 401, {"message": "401: Unauthorized", "code": 0}, {}
        guild = re.fullmatch(rf"{API_PREFIX}/guilds/(\d+)/threads/active", path)
        if guild is not None and method == "GET":
            return self._active_threads(guild.group(1))
        match = re.fullmatch(
            rf"{API_PREFIX}/channels/(\d+)(/threads/archived/public|/threads|/messages)?(\?.*)?",
            path)
        if match is None:
            return 404, {"message": "404: Not Found", "code": 0}, {}
        channel, tail = match.group(1), match.group(2) or ""
        bucket = f"{method}{tail}:{channel}"
        with self.lock:
            self._global = [t for t in self._global if now - t < 1.0]
            if len(self._global) >= self.global_limit:
                return self._too_many(1.0 - (now - self._global[0]), True)
            self._global.append(now)
            used = [t for t in self._buckets.get(bucket, []) if now - t < self.bucket_window]
            if method == "POST" and len(used) >= self.bucket_limit:
                self._buckets[bucket] = used
                retry = used[0] + self.bucket_window - now
                status, body, extra = self._too_many(retry, False)
                extra.update(self._rate_headers(bucket, used, now))
                return status, body, extra
            if method == "POST":
                used.append(now)
            self._buckets[bucket] = used
            limits = self._rate_headers(bucket, used, now)
            if channel in self.forbidden:
                return 403, {"message": "Missing Access", "code": 50001}, limits
            if method == "POST" and tail == "/threads":
                return (*self._create_thread(channel, payload), limits)
            if method == "POST" and tail == "/messages":
                return (*self._create_message(channel, payload, now), limits)
            if method == "GET" and tail == "/threads/archived/public":
                return (*self._archived_threads(channel), limits)
            if method == "GET" and not tail:
                return (*self._channel(channel), limits)
            if method == "PATCH" and not tail:
                return (*self._rename(channel, payload), limits)
            if method == "GET" and tail == "/messages":
                if channel not in self.threads:
                    return 404, {"message": "Unknown Channel", "code": 10003}, limits
                return 200, list(reversed(self.threads[channel].messages))[:50], limits
            if method == "DELETE" and not tail:
                thread = self.threads.pop(channel, None)
                return (200, {"id": channel}, limits) if thread else \
                    (404, {"message": "Unknown Channel", "code": 10003}, limits)
        return 405, {"message": "405: Method Not Allowed", "code": 0}, {}

    @staticmethod
    def _thread_json(thread: Thread) -> dict[str, Any]:
        return {"id": thread.id, "type": thread.type, "name": thread.name,
                "parent_id": thread.parent_id, "message_count": len(thread.messages),
                "thread_metadata": {"archived": thread.archived, "locked": thread.locked,
                                    "auto_archive_duration": 10080}}

    def _channel(self, channel: str) -> tuple[int, Any]:
        if channel in self.channels:
            return 200, {"id": channel, "type": 15 if channel in self.forums else 0,
                         "guild_id": self.guild}
        if channel in self.threads:
            return 200, {**self._thread_json(self.threads[channel]), "guild_id": self.guild}
        return 404, {"message": "Unknown Channel", "code": 10003}

    def _active_threads(self, guild: str) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            if guild != self.guild:
                return 404, {"message": "Unknown Guild", "code": 10004}, {}
            found = [self._thread_json(t) for t in self.threads.values() if not t.archived
                     and t.parent_id not in self.forbidden]
        return 200, {"threads": found, "members": []}, {}

    def _archived_threads(self, channel: str) -> tuple[int, Any]:
        if channel not in self.channels:
            return 404, {"message": "Unknown Channel", "code": 10003}
        found = [self._thread_json(t) for t in self.threads.values()
                 if t.archived and t.parent_id == channel]
        return 200, {"threads": found[::-1][:100], "members": [], "has_more": len(found) > 100}

    def _fault(self, fault: Fault) -> tuple[int, Any, dict[str, str]]:
        if fault.status == 429:
            return self._too_many(fault.retry_after, fault.global_)
        messages = {401: ("401: Unauthorized", 0), 403: ("Missing Access", 50001),
                    404: ("Unknown Channel", 10003)}
        text, code = messages.get(fault.status, (f"{fault.status}: injected", 0))
        return fault.status, {"message": text, "code": code}, {}

    @staticmethod
    def _too_many(retry_after: float, is_global: bool) -> tuple[int, Any, dict[str, str]]:
        retry_after = max(retry_after, 0.001)
        headers = {"Retry-After": str(max(1, round(retry_after))),
                   "X-RateLimit-Scope": "global" if is_global else "user"}
        if is_global:
            headers["X-RateLimit-Global"] = "true"
        return 429, {"message": "You are being rate limited.",
                     "retry_after": round(retry_after, 3), "global": is_global}, headers

    @staticmethod
    def _invalid(field_name: str, message: str) -> tuple[int, Any]:
        return 400, {"message": "Invalid Form Body", "code": 50035,
                     "errors": {field_name: {"_errors": [{"code": "BASE_TYPE_INVALID",
                                                          "message": message}]}}}

    def _create_thread(self, channel: str, payload: Any) -> tuple[int, Any]:
        if channel not in self.channels:
            return 404, {"message": "Unknown Channel", "code": 10003}
        if not isinstance(payload, dict):
            return 400, {"message": "400: Bad Request", "code": 0}
        name = payload.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            return self._invalid("name", "Must be between 1 and 100 in length.")
        forum = channel in self.forums
        if not forum and payload.get("type") != PUBLIC_THREAD:
            return self._invalid("type", "the mirror must create public threads (type 11)")
        duration = payload.get("auto_archive_duration", 1440)
        if duration not in ARCHIVE_DURATIONS:
            return self._invalid("auto_archive_duration", "Value must be one of {60, 1440, "
                                 "4320, 10080}.")
        starter = payload.get("message")
        if forum and not isinstance(starter, dict):
            return self._invalid("message", "a forum post needs its first message")
        thread = Thread(self._next_id(), name, channel, PUBLIC_THREAD)
        self.threads[thread.id] = thread
        if forum:
            status, body = self._create_message(thread.id, starter, time.monotonic(),
                                                message_id=thread.id)
            if status != 200:
                del self.threads[thread.id]
                return status, body
        return 201, {"id": thread.id, "type": PUBLIC_THREAD, "name": name,
                     "parent_id": channel, "message_count": 0}

    def _execute_webhook(self, webhook_id: str, token: str, query: dict[str, list[str]],
                         payload: Any, now: float) -> tuple[int, Any, dict[str, str]]:
        known = self.webhooks.get(webhook_id)
        if known is None or known[0] != token:
            return 404, {"message": "Unknown Webhook", "code": 10015}, {}
        channel = known[1]
        bucket = f"webhook:{webhook_id}"
        used = [t for t in self._buckets.get(bucket, []) if now - t < self.bucket_window]
        if len(used) >= self.bucket_limit:
            return self._too_many(used[0] + self.bucket_window - now, False)
        self._buckets[bucket] = [*used, now]
        body = dict(payload) if isinstance(payload, dict) else {}
        name = body.pop("thread_name", None)
        thread_id = (query.get("thread_id") or [""])[0]
        if name is not None:
            if channel not in self.forums:
                return (*self._invalid("thread_name", "only a forum webhook makes posts"), {})
            status, made = self._create_thread(channel, {"name": name, "message": body})
            if status != 201:
                return status, made, {}
            message = self.threads[made["id"]].messages[0]
        elif thread_id:
            thread = self.threads.get(thread_id)
            if thread is None or thread.parent_id != channel:
                return 404, {"message": "Unknown Channel", "code": 10003}, {}
            status, message = self._create_message(thread_id, body, now)
            if status != 200:
                return status, message, {}
        else:
            return (*self._invalid("thread_id", "the mirror always names a thread"), {})
        wait = (query.get("wait") or ["false"])[0] == "true"
        return (200, message, {}) if wait else (204, None, {})

    def _rename(self, channel: str, payload: Any) -> tuple[int, Any]:
        thread = self.threads.get(channel)
        if thread is None:
            return 404, {"message": "Unknown Channel", "code": 10003}
        name = payload.get("name") if isinstance(payload, dict) else None
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            return self._invalid("name", "Must be between 1 and 100 in length.")
        thread.name = name
        self.renames.append((channel, name))
        return 200, self._thread_json(thread)

    def _create_message(self, channel: str, payload: Any, now: float,
                        message_id: str = "") -> tuple[int, Any]:
        thread = self.threads.get(channel)
        if thread is None:
            return 404, {"message": "Unknown Channel", "code": 10003}
        if thread.archived and thread.locked:
            return 400, {"message": "Thread is archived", "code": 50083}
        if thread.locked:
            return 403, {"message": "Missing Permissions", "code": 50013}
        if not isinstance(payload, dict):
            return 400, {"message": "400: Bad Request", "code": 0}
        content = payload.get("content")
        if not isinstance(content, str) or not content.strip():
            return 400, {"message": "Cannot send an empty message", "code": 50006}
        if len(content) > 2000:
            return self._invalid("content", "Must be 2000 or fewer in length.")
        mentions = payload.get("allowed_mentions")
        if not isinstance(mentions, dict) or mentions.get("parse") != [] or \
                mentions.get("users") or mentions.get("roles"):
            return self._invalid("allowed_mentions", "mentions must be disabled (parse: [])")
        nonce = payload.get("nonce")
        if nonce is not None and not (isinstance(nonce, int) or
                                      (isinstance(nonce, str) and len(nonce) <= 25)):
            return self._invalid("nonce", "Must be 25 or fewer in length.")
        if nonce is not None and payload.get("enforce_nonce"):
            seen = self._nonces.get(str(nonce))
            if seen is not None and now - seen[0] < self.nonce_window:
                return 200, seen[1]
        thread.archived = False  # a post unarchives a thread that is not locked
        message = {"id": message_id or self._next_id(), "channel_id": channel,
                   "content": content,
                   "nonce": nonce, "allowed_mentions": mentions, "mentions": [],
                   "mention_everyone": False, "type": 0}
        thread.messages.append(message)
        if nonce is not None:
            self._nonces[str(nonce)] = (now, message, channel)
        return 200, message

    def messages_total(self) -> int:
        return len(self.all_messages())
