"""`DiscordSink`: one public thread per session, one post (split at 2000) per turn.

Idempotent by event id: the thread id is recorded before anything is posted into it; every
part carries a nonce derived from the event id with `enforce_nonce`, so Discord itself drops
a repeat sent within its dedup window (a crash between "posted" and "recorded"); a part
whose send is older than that window is looked for among the thread's latest messages
before it is sent again; and the last delivered events of each session are remembered in
the map, so a redelivery posts nothing.

One bad thread never stops the sink: a thread that refuses posts (deleted: 404, locked: 403,
archived and locked: 400 code 50083) is retired for its session only, and the session
continues in a new thread named after the session with " (continued)", whose first post
says why. Only when the new thread refuses too is it the channel (the bot may not post in
its threads), and that stops the sink.

Thread creation has no nonce, so it is made idempotent by hand: the intent (the exact,
per-session unique name) is recorded before the POST, and a later delivery that finds an
intent without a thread id first looks for a thread of that name under the channel (active
and archived, one lookup per delivery) and adopts it. If the lookup is refused it creates
anyway: a second thread is the lesser harm than a lost turn. A creation that got no answer
at all may still be carried out later, so it is not repeated until the thread has had
`LATE_WINDOW` seconds to appear (the turn goes back to the spool meanwhile).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roam_core.plugin import (
    ConfigError,
    PluginContext,
    Receipt,
    SessionRetry,
    SinkRejected,
    SinkRetry,
    SinkTerminal,
    TurnEvent,
)
from roam_sink_discord.client import (
    DiscordClient,
    Forbidden,
    MaybeSent,
    NotFound,
    ThreadArchived,
)
from roam_sink_discord.format import compose_name, format_turn, session_label, split_message
from roam_sink_discord.threads import ThreadMap

log = logging.getLogger(__name__)

NAME = "discord"
TOKEN_SECRET = "ROAM_DISCORD_BOT_TOKEN"
DEFAULT_API_BASE = "https://discord.com/api/v10"
PUBLIC_THREAD = 11
#: Discord's channel type of a forum: its threads are posts, created with a first message.
FORUM_CHANNEL = 15
ARCHIVE_MINUTES = 10080
#: Creations of one thread tried in one delivery (each after looking for the last one).
CREATE_ATTEMPTS = 3
NO_MENTIONS: dict[str, list[str]] = {"parse": []}
#: How long Discord is trusted to drop a repeated nonce ("the past few minutes").
NONCE_WINDOW = 120.0
#: How long a thread creation that got no answer may take to show up before another is made.
LATE_WINDOW = 60.0
#: Why a thread refuses posts, by the exception Discord's answer became.
_REFUSALS: tuple[tuple[type[Exception], str], ...] = (
    (NotFound, "deleted"), (ThreadArchived, "archived"), (Forbidden, "locked"))


def _flag(value: Any, name: str) -> bool:
    """A yes/no setting (YAML gives a bool; `roam config set` may give the word)."""
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "yes", "on", "1"):
        return True
    if str(value).strip().lower() in ("false", "no", "off", "0", "", "none"):
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


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
        self.footer = _flag(settings.get("discord_footer", False), "discord_footer")
        self.threads = ThreadMap(Path(context.home))
        self.client = client or DiscordClient(self.api_base, self._token)
        self._forum: bool | None = None

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
        if entry is not None and not entry.get("thread_id") and entry.get("intent"):
            self._adopt_or_wait(event, entry)
            entry = self.threads.get(self.channel, key)
        if entry is not None and entry.get("thread_id"):
            for recent in entry.get("recent", []):
                if recent.get("event_id") == event.event_id:
                    return self._receipt(event, entry["thread_id"], recent["message_ids"])
        parts = split_message(format_turn(event, footer=self.footer))
        fresh = ""
        while True:
            entry = self.threads.get(self.channel, key) or {}
            thread_id = entry.get("thread_id") or self._open_thread(event, entry)
            if not entry.get("thread_id"):
                fresh = thread_id
                entry = self.threads.get(self.channel, key) or {}
            progress = entry.get("progress") or {}
            mine = progress.get("event_id") == event.event_id
            posted = list(progress.get("message_ids", [])) if mine else []
            try:
                self._note_continuation(key, thread_id, entry)
                if mine and len(posted) < len(parts):
                    posted += self._found_after_window(thread_id, progress, parts[len(posted)])
                for index in range(len(posted), len(parts)):
                    self.threads.set_progress(self.channel, key, event.event_id, posted,
                                              attempting=time.time())
                    posted.append(self._post(thread_id, event.event_id, index, parts[index]))
            except (NotFound, ThreadArchived, Forbidden) as refusal:
                if thread_id == fresh:  # a thread made for this turn refuses it too
                    raise self._channel_refuses(refusal) from None
                reason = next(why for kind, why in _REFUSALS if isinstance(refusal, kind))
                log.warning("roam mirror: the Discord thread of %s was %s; continuing the "
                            "session in a new thread", key, reason)
                self.threads.retire(self.channel, key, thread_id, reason)
                continue
            self.threads.done(self.channel, key, event.event_id, posted)
            self._rename_once(event, thread_id, entry)
            return self._receipt(event, thread_id, posted)

    def _channel_refuses(self, refusal: Exception) -> Exception:
        """The error for a brand-new thread refusing its first post: the channel's doing."""
        if isinstance(refusal, Forbidden):
            return SinkTerminal(
                f"Discord denied posting in the threads of channel {self.channel} (403); the "
                "bot needs View Channel, Create Public Threads and Send Messages in Threads")
        if isinstance(refusal, NotFound):
            return SessionRetry("the Discord thread vanished twice while posting")
        return SinkRejected(str(refusal))

    @staticmethod
    def _continuation_text(previous: dict[str, Any]) -> str:
        reason = str(previous.get("reason") or "unavailable")
        old = str(previous.get("thread_id") or "")
        where = f" <#{old}>" if old.isdigit() else ""
        return f"*Continued from this session's earlier thread{where}, which was {reason}.*"

    def _note_continuation(self, key: str, thread_id: str, entry: dict[str, Any]) -> None:
        """The first post of a continuation thread says where the session came from."""
        previous = entry.get("continued_from")
        if not isinstance(previous, dict) or previous.get("noted"):
            return
        self._post(thread_id, f"continued:{thread_id}", 0, self._continuation_text(previous))
        self.threads.update(self.channel, key, continued_from={**previous, "noted": True})

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

    def _adopt_or_wait(self, event: TurnEvent, entry: dict[str, Any]) -> None:
        """Adopt the thread of an interrupted creation, or wait while it may still appear."""
        if self._adopt(event, entry) is not None:
            return
        intent = entry.get("intent") or {}
        waited = time.time() - float(intent.get("at") or 0)
        if intent.get("unanswered") and waited < LATE_WINDOW:
            raise SessionRetry("Discord gave no answer to a thread creation; looking for "
                               "that thread again before creating another",
                               retry_after=LATE_WINDOW - waited)

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

    def _open_thread(self, event: TurnEvent, entry: dict[str, Any]) -> str:
        """A new thread for the session; a creation whose answer was lost is looked for."""
        for attempt in range(CREATE_ATTEMPTS - 1):
            try:
                return self._create_thread(event, entry)
            except MaybeSent as error:
                unanswered = not error.answered
            current = self.threads.get(self.channel, event.session_key) or {}
            adopted = self._adopt(event, current)
            if adopted is not None:
                return adopted
            if unanswered:  # it may still be made: creating another could leave two
                self.threads.mark_unanswered(self.channel, event.session_key)
                raise SessionRetry("Discord gave no answer to a thread creation; looking "
                                   "for that thread again before creating another",
                                   retry_after=LATE_WINDOW)
            self.client.sleep(0.5 * 2 ** attempt)
        return self._create_thread(event, entry)  # a lost answer now goes back to the spool

    def _name(self, event: TurnEvent, entry: dict[str, Any],
              label: str | None = None) -> str:
        """The thread name for the session's current thread (generation 0, 1, …)."""
        generation = int(entry.get("generation", 0) or 0)
        seed = f"roam-thread\0{event.session_key}"
        if generation:  # each continuation has its own name, so adoption finds the right one
            seed += f"\0{generation}"
        tag = hashlib.sha256(seed.encode()).hexdigest()[:6]
        label = label or str(entry.get("label") or "") or session_label(event)
        return compose_name(label, tag, continued=generation > 0)

    def _is_forum(self) -> bool:
        """Whether the channel is a forum (asked once per sink)."""
        if self._forum is None:
            try:
                channel = self.client.request("GET", "GET /channels/{id}", self.channel,
                                              f"/channels/{self.channel}")
            except NotFound:
                raise SinkTerminal(f"Discord channel {self.channel} does not exist or the bot "
                                   "cannot see it (404)") from None
            self._forum = isinstance(channel, dict) and channel.get("type") == FORUM_CHANNEL
        return self._forum

    def _starter(self, event: TurnEvent, entry: dict[str, Any]) -> str:
        """A forum post's first message: the continuation note, or what the post mirrors."""
        if isinstance(entry.get("continued_from"), dict):
            return self._continuation_text(entry["continued_from"])
        label = str(entry.get("label") or "") or session_label(event)
        return f"**{label}**\n-# Hermes session {event.session_id}, mirrored by roam"

    def _create_thread(self, event: TurnEvent, entry: dict[str, Any]) -> str:
        name = self._name(event, entry)
        payload: dict[str, Any] = {"name": name, "auto_archive_duration": ARCHIVE_MINUTES}
        if self._is_forum():  # a forum post is created together with its first message
            payload["message"] = {"content": self._starter(event, entry),
                                  "allowed_mentions": NO_MENTIONS}
        else:
            payload["type"] = PUBLIC_THREAD
        self.threads.set_intent(self.channel, event.session_key, name,
                                label=session_label(event), titled=bool(event.title))
        try:
            body = self.client.request(
                "POST", "POST /channels/{id}/threads", self.channel,
                f"/channels/{self.channel}/threads", payload, idempotent=False)
        except NotFound:
            raise SinkTerminal(f"Discord channel {self.channel} does not exist or the bot "
                               "cannot see it (404)") from None
        thread_id = str(body.get("id") or "") if isinstance(body, dict) else ""
        if not thread_id.isdigit():
            raise SinkRetry("Discord answered thread creation without a thread id")
        self.threads.set_thread(self.channel, event.session_key, thread_id, name)
        previous = entry.get("continued_from")
        if "message" in payload and isinstance(previous, dict):  # the starter said it
            self.threads.update(self.channel, event.session_key,
                                continued_from={**previous, "noted": True})
        return thread_id

    def _rename_once(self, event: TurnEvent, thread_id: str, entry: dict[str, Any]) -> None:
        """Name the thread after the session's title once Hermes gave it one (one PATCH)."""
        if entry.get("titled") or not event.title.strip() or not entry.get("label"):
            return
        label = session_label(event)
        name = self._name(event, entry, label)
        try:
            self.client.request("PATCH", "PATCH /channels/{id}", thread_id,
                                f"/channels/{thread_id}", {"name": name})
        except SinkRetry as error:  # rate-limited or down: the next turn tries again
            log.info("roam mirror: renaming the Discord thread waits: %s", error)
            return
        except (SinkTerminal, SinkRejected, NotFound) as error:
            log.warning("roam mirror: cannot rename the Discord thread: %s", error)
        self.threads.update(self.channel, event.session_key, label=label, titled=True,
                            name=name)

    def _post(self, thread_id: str, event_id: str, index: int, content: str) -> str:
        body = self.client.request(
            "POST", "POST /channels/{id}/messages", thread_id,
            f"/channels/{thread_id}/messages",
            {"content": content, "allowed_mentions": NO_MENTIONS,
             "nonce": nonce_for(event_id, index), "enforce_nonce": True})
        return str(body.get("id") or "") if isinstance(body, dict) else ""
