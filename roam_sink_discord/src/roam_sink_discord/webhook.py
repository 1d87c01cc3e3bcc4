"""`DiscordWebhookSink`: the mirror through a forum channel's webhook, with no bot.

The webhook URL (the secret `ROAM_DISCORD_WEBHOOK_URL`; it is the credential) makes one
forum post per session (`thread_name`, with a first message naming the session) and
appends each turn to it (`thread_id`). The spool, the redaction, the session→post map and
the continuation of a post that refuses (deleted, locked, archived) are the bot sink's.

What a webhook cannot do, and what that costs: it cannot list threads, so a creation that
got no answer is not looked for (the next try creates the post again, which may leave an
empty one; waiting instead would hold every outage's first turn back for a minute); it
sends no nonce, so a crash between a post and its record may show that part twice; it
cannot rename a post when Hermes titles the session later. The URL never appears in a
log, an error, the fingerprint or the map (keyed by webhook id).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from roam_core.plugin import PluginContext, SinkRetry, SinkTerminal, TurnEvent
from roam_sink_discord.client import DiscordClient, MaybeSent, NotFound
from roam_sink_discord.format import session_label
from roam_sink_discord.sink import NO_MENTIONS, DiscordSink

NAME = "discord-webhook"
URL_SECRET = "ROAM_DISCORD_WEBHOOK_URL"
_URL = re.compile(r"https?://[^/@\s]+(?:/api(?:/v\d+)?)?/webhooks/(\d+)/[\w-]+")
#: Discord's code for a webhook that does not exist (deleted, or a wrong token).
UNKNOWN_WEBHOOK = 10015


class DiscordWebhookSink(DiscordSink):
    """Posts turns into forum posts through one webhook."""

    name = NAME

    def __init__(self, settings: Mapping[str, Any], context: PluginContext) -> None:
        self.context = context
        self._url: tuple[str, str] | None = None
        super().__init__({**settings, "discord_channel_id": "0"}, context,
                         client=DiscordClient("http://unused", lambda: ""))
        self._forum = True

    def _webhook(self) -> tuple[str, str]:
        """(webhook id, URL), read once; a missing or malformed URL is terminal."""
        if self._url is None:
            try:
                url = (self.context.secret(URL_SECRET) or "").strip()
            except Exception as error:  # Hermes's secret scope, off the agent's thread
                raise SinkRetry(f"{URL_SECRET} is not readable here ({type(error).__name__})"
                                "; the turn stays spooled") from None
            if not url:
                raise SinkTerminal(f"{URL_SECRET} is not set")
            match = _URL.fullmatch(url)
            if match is None:  # the value is a secret: never repeated in the message
                raise SinkTerminal(f"{URL_SECRET} is not a Discord webhook URL "
                                   "(https://discord.com/api/webhooks/ID/TOKEN)")
            self._url = (match.group(1), url)
            self.channel = f"webhook:{match.group(1)}"
            self.client = DiscordClient(url, lambda: "")
        return self._url

    def fingerprint(self) -> str:
        try:
            webhook_id, url = self._webhook()
        except (SinkRetry, SinkTerminal):
            return "webhook|no-url"
        digest = hashlib.sha256(b"roam-discord-webhook\0" + url.encode()).hexdigest()[:16]
        return f"webhook|{webhook_id}|{digest}"

    def deliver(self, event: TurnEvent) -> Any:
        self._webhook()
        try:
            return super().deliver(event)
        except NotFound as error:  # the webhook itself is gone
            raise SinkTerminal("the Discord webhook does not exist any more (404); set a new "
                               f"{URL_SECRET}") from error

    def _request(self, query: str, payload: dict[str, Any], idempotent: bool = True) -> Any:
        webhook_id, _url = self._webhook()
        try:
            return self.client.request("POST", "POST /webhooks/{id}", webhook_id, query,
                                       payload, idempotent=idempotent)
        except NotFound as error:
            if error.code == UNKNOWN_WEBHOOK:
                raise SinkTerminal("the Discord webhook does not exist any more (404); set a "
                                   f"new {URL_SECRET}") from None
            raise

    def _create_thread(self, event: TurnEvent, entry: dict[str, Any]) -> str:
        name = self._name(event, entry)
        self.threads.set_intent(self.channel, event.session_key, name,
                                label=session_label(event), titled=bool(event.title))
        body = self._request("?wait=true", {"content": self._starter(event, entry),
                                            "thread_name": name,
                                            "allowed_mentions": NO_MENTIONS}, idempotent=False)
        thread_id = str(body.get("channel_id") or "") if isinstance(body, dict) else ""
        if not thread_id.isdigit():
            raise SinkRetry("Discord answered the webhook without the new post's id")
        self.threads.set_thread(self.channel, event.session_key, thread_id, name)
        previous = entry.get("continued_from")
        if isinstance(previous, dict):  # the first message said it
            self.threads.update(self.channel, event.session_key,
                                continued_from={**previous, "noted": True})
        return thread_id

    def _post(self, thread_id: str, event_id: str, index: int, content: str) -> str:
        body = self._request(f"?wait=true&thread_id={thread_id}",
                             {"content": content, "allowed_mentions": NO_MENTIONS})
        return str(body.get("id") or "") if isinstance(body, dict) else ""

    def _open_thread(self, event: TurnEvent, entry: dict[str, Any]) -> str:
        try:
            return self._create_thread(event, entry)
        except MaybeSent as error:
            raise SinkRetry(f"{error}; the post is made again on the next try") from None

    def _adopt(self, event: TurnEvent, entry: dict[str, Any]) -> str | None:
        return None  # a webhook cannot list threads

    def _found_after_window(self, thread_id: str, progress: dict[str, Any],
                            content: str) -> list[str]:
        return []  # nor read them

    def _rename_once(self, event: TurnEvent, thread_id: str, entry: dict[str, Any]) -> None:
        return  # nor rename them
