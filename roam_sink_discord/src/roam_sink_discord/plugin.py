"""Posts every finished agent turn into one Discord thread per session."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from roam_core.plugin import PluginContext, Setting, SinkPlugin, hookimpl


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Any:
    from roam_sink_discord.sink import DiscordSink

    return DiscordSink(settings, context)


def _webhook_factory(settings: Mapping[str, Any], context: PluginContext) -> Any:
    from roam_sink_discord.webhook import DiscordWebhookSink

    return DiscordWebhookSink(settings, context)


@hookimpl
def roam_session_sinks() -> Iterator[SinkPlugin]:
    yield SinkPlugin(
        name="discord",
        summary="one public Discord thread per session, one post per turn",
        factory=_factory,
        settings=(
            Setting("discord_channel_id", "the channel that holds the threads", required=True),
            Setting("discord_api_base", "the Discord API base, version included",
                    default="https://discord.com/api/v10"),
            Setting("discord_footer", "end each post with the model, the profile and the "
                    "time", default=False),
            Setting("ROAM_DISCORD_BOT_TOKEN", "the bot's token (a secret, never in config.yaml)",
                    required=True, secret=True),
        ),
    )
    yield SinkPlugin(
        name="discord-webhook",
        summary="one Discord forum post per session through a webhook (no bot)",
        factory=_webhook_factory,
        settings=(
            Setting("ROAM_DISCORD_WEBHOOK_URL", "a forum channel's webhook URL (a secret: it "
                    "is the credential)", required=True, secret=True),
        ),
    )
