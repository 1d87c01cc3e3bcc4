"""`DiscordSink`: one public thread per session, one post (split at 2000) per turn.

Idempotent by event id: the thread id is recorded before anything is posted into it; every
part carries a nonce derived from the event id with `enforce_nonce`, so Discord itself drops
a repeat sent within its dedup window (a crash between "posted" and "recorded"); a part
whose send is older than that window is looked for among the thread's latest messages
before it is sent again; and the last delivered events of each session are remembered in
the map, so a redelivery posts nothing. A thread that is gone (404) is recreated.

Thread creation has no nonce, so it is made idempotent by hand: the intent (the exact,
per-session unique name) is recorded before the POST, and a later delivery that finds an
intent without a thread id first looks for a thread of that name under the channel (active
and archived, one lookup per delivery) and adopts it. If the lookup is refused it creates
anyway: a second thread is the lesser harm than a lost turn.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roam_core.errors import ConfigError
from roam_core.mirror.events import TurnEvent
from roam_core.mirror.sink import Receipt, SinkRejected, SinkRetry, SinkTerminal
from roam_core.types import PluginContext
from roam_sink_discord.client import DiscordClient, MaybeSent, NotFound
from roam_sink_discord.format import format_turn, split_message, thread_name
from roam_sink_discord.threads import ThreadMap

log = logging.getLogger(__name__)

NAME = "discord"
TOKEN_SECRET = "ROAM_DISCORD_BOT_TOKEN"
DEFAULT_API_BASE = "https://discord.com/api/v10"
PUBLIC_THREAD = 11
ARCHIVE_MINUTES = 10080
#: Creations of one thread tried in one delivery (each after looking for the last one).
CREATE_ATTEMPTS = 3
NO_MENTIONS: dict[str, list[str]] = {"parse": []}
#: How long Discord is trusted to drop a repeated nonce ("the past few minutes").
NONCE_WINDOW = 120.0


def nonce_for(event_id: str, part: int) -> str:
    """Discord's nonce for one part of one event: deterministic, at most 25 characters."""
    return hashlib.sha256(f"{event_id}:{part}".encode()).hexdigest()[:25]


class DiscordSink:
    """Posts turns into threads of one channel."""

    name = NAME

    def __init__(self, settings: Mapping[str, Any], context: PluginContext,
                 client: DiscordClient | None = None) -> None:
        channel = settings.get("discord_channel_id")
        if channel is None or not str(channel).strip().isdigit():
            raise ConfigError("discord_channel_id must be the numeric id of a Discord channel")
        self.channel = str(channel).strip()
        self.api_base = str(settings.get("discord_api_base") or DEFAULT_API_BASE).rstrip("/")
        if not self.api_base.startswith(("https://", "http://")):
            raise ConfigError("discord_api_base must be an http(s) URL")
        if "@" in self.api_base:  # it is part of fingerprint(), which is stored and shown
            raise ConfigError("discord_api_base must not contain credentials; the bot token "
                              f"is the secret {TOKEN_SECRET}")
        self.context = context
        self.threads = ThreadMap(Path(context.home))
        self.client = client or DiscordClient(self.api_base, self._token)

    # -- configuration -------------------------------------------------------------------

    def _token(self) -> str:
        try:
            token = self.context.secret(TOKEN_SECRET)
        except Exception as error:  # e.g. Hermes's UnscopedSecretError off the agent thread
            raise SinkRetry(f"{TOKEN_SECRET} is not readable here ({type(error).__name__}); "
                            "the turn stays spooled") from None
        if not token or not token.strip():
            raise SinkTerminal(f"{TOKEN_SECRET} is not set")
        return token.strip()

    def fingerprint(self) -> str:
        try:
            token = self.context.secret(TOKEN_SECRET) or ""
        except Exception:
            token = ""
        identity = hashlib.sha256(b"roam-discord-token\0" + token.encode()).hexdigest()[:16]
        return f"{self.api_base}|{self.channel}|{identity if token else 'no-token'}"

    def close(self) -> None:
        self.client.close()

    # -- delivery ------------------------------------------------------------------------

    def deliver(self, event: TurnEvent) -> Receipt:
        key = event.session_key
        entry = self.threads.get(self.channel, key)
        if entry is not None and not entry.get("thread_id"):
            entry = None if self._adopt(event, entry) is None else \
                self.threads.get(self.channel, key)
        if entry is not None:
            for recent in entry.get("recent", []):
                if recent.get("event_id") == event.event_id:
                    return self._receipt(event, entry["thread_id"], recent["message_ids"])
        parts = split_message(format_turn(event))
        for _attempt in range(2):
            thread_id = entry["thread_id"] if entry else self._open_thread(event)
            progress = (entry or {}).get("progress") or {}
            mine = progress.get("event_id") == event.event_id
            posted = list(progress.get("message_ids", [])) if mine else []
            try:
                if mine and len(posted) < len(parts):
                    posted += self._found_after_window(thread_id, progress, parts[len(posted)])
                for index in range(len(posted), len(parts)):
                    self.threads.set_progress(self.channel, key, event.event_id, posted,
                                              attempting=time.time())
                    posted.append(self._post(thread_id, event.event_id, index, parts[index]))
            except NotFound:
                # The thread was deleted: forget it and start the turn over in a new one.
                self.threads.forget(self.channel, key, thread_id)
                entry = None
                continue
            self.threads.done(self.channel, key, event.event_id, posted)
            return self._receipt(event, thread_id, posted)
        raise SinkRetry("the Discord thread vanished twice while posting")

    def _found_after_window(self, thread_id: str, progress: dict[str, Any],
                            content: str) -> list[str]:
        """The part a crashed sender may have posted, once Discord's nonce window is over.

        Within the window the nonce makes a resend harmless. After it, the thread's latest
        messages are read, and a message with exactly this content counts as posted.
        """
        attempting = float(progress.get("attempting_at") or 0)
        if not attempting or time.time() - attempting < NONCE_WINDOW:
            return []
        try:
            recent = self.client.request(
                "GET", "GET /channels/{id}/messages", thread_id,
                f"/channels/{thread_id}/messages?limit=50") or []
        except (SinkTerminal, SinkRejected):
            return []  # no Read Message History: resend, a duplicate is the lesser harm
        for message in recent if isinstance(recent, list) else []:
            if isinstance(message, dict) and message.get("content") == content:
                return [str(message.get("id") or "")]
        return []

    def _receipt(self, event: TurnEvent, thread_id: str, message_ids: list[str]) -> Receipt:
        return Receipt(sink=NAME, event_id=event.event_id, reference=f"{thread_id}",
                       parts=len(message_ids),
                       details={"thread_id": thread_id, "message_ids": list(message_ids)})

    def _adopt(self, event: TurnEvent, entry: dict[str, Any]) -> str | None:
        """The thread an earlier, interrupted creation left behind, recorded if found."""
        intent = entry.get("intent")
        name = intent.get("name") if isinstance(intent, dict) else None
        if not isinstance(name, str) or not name:
            return None
        try:
            thread_id = self._find_thread(name)
        except (SinkTerminal, SinkRejected, NotFound) as error:
            log.warning("roam mirror: cannot look for the Discord thread an interrupted "
                        "creation may have left (%s); creating a new one", error)
            return None
        if thread_id is not None:
            self.threads.set_thread(self.channel, event.session_key, thread_id, name)
        return thread_id

    def _find_thread(self, name: str) -> str | None:
        """A thread of this channel named `name`: active ones first, then archived ones."""
        channel = self.client.request("GET", "GET /channels/{id}", self.channel,
                                      f"/channels/{self.channel}")
        guild = str(channel.get("guild_id") or "") if isinstance(channel, dict) else ""
        listings = []
        if guild.isdigit():
            listings.append(self.client.request(
                "GET", "GET /guilds/{id}/threads/active", guild,
                f"/guilds/{guild}/threads/active"))
        listings.append(self.client.request(
            "GET", "GET /channels/{id}/threads/archived/public", self.channel,
            f"/channels/{self.channel}/threads/archived/public?limit=100"))
        for listing in listings:
            threads = listing.get("threads") if isinstance(listing, dict) else None
            found = sorted(
                (str(t.get("id")) for t in threads or [] if isinstance(t, dict)
                 and str(t.get("parent_id")) == self.channel and t.get("name") == name
                 and str(t.get("id") or "").isdigit()), key=int)
            if found:
                return found[0]  # the oldest, should a refused lookup once have made two
        return None

    def _open_thread(self, event: TurnEvent) -> str:
        """A new thread for the session; a creation whose answer was lost is looked for."""
        for attempt in range(CREATE_ATTEMPTS - 1):
            try:
                return self._create_thread(event)
            except MaybeSent:
                pass
            entry = self.threads.get(self.channel, event.session_key) or {}
            adopted = self._adopt(event, entry)
            if adopted is not None:
                return adopted
            self.client.sleep(0.5 * 2 ** attempt)
        return self._create_thread(event)  # a lost answer now goes back to the spool

    def _create_thread(self, event: TurnEvent) -> str:
        tag = hashlib.sha256(f"roam-thread\0{event.session_key}".encode()).hexdigest()[:6]
        name = thread_name(event, tag)
        self.threads.set_intent(self.channel, event.session_key, name)
        try:
            body = self.client.request(
                "POST", "POST /channels/{id}/threads", self.channel,
                f"/channels/{self.channel}/threads",
                {"name": name, "type": PUBLIC_THREAD, "auto_archive_duration": ARCHIVE_MINUTES},
                idempotent=False)
        except NotFound:
            raise SinkTerminal(f"Discord channel {self.channel} does not exist or the bot "
                               "cannot see it (404)") from None
        thread_id = str(body.get("id") or "") if isinstance(body, dict) else ""
        if not thread_id.isdigit():
            raise SinkRetry("Discord answered thread creation without a thread id")
        self.threads.set_thread(self.channel, event.session_key, thread_id, name)
        return thread_id

    def _post(self, thread_id: str, event_id: str, index: int, content: str) -> str:
        body = self.client.request(
            "POST", "POST /channels/{id}/messages", thread_id,
            f"/channels/{thread_id}/messages",
            {"content": content, "allowed_mentions": NO_MENTIONS,
             "nonce": nonce_for(event_id, index), "enforce_nonce": True})
        return str(body.get("id") or "") if isinstance(body, dict) else ""
