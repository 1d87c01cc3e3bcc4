"""The plugin module roam loads through the entry point: one hook, one record."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from roam_core.plugin import ConfigError, PluginContext, Setting, SinkPlugin, hookimpl

TOKEN_SECRET = "ROAM_EXAMPLE_WEBHOOK_TOKEN"

SETTINGS = (
    Setting("example_webhook_url", "where each turn is POSTed as JSON (http or https)",
            required=True),
    Setting(TOKEN_SECRET, "sent as a bearer token when set (a secret: environment or .env, "
            "never config.yaml)", secret=True),
)


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Any:
    url = str(settings.get("example_webhook_url") or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("sink example needs example_webhook_url, an http(s) URL "
                          "(roam config set example_webhook_url https://host/hook)")
    from roam_sink_example.sink import WebhookSink

    return WebhookSink(url, lambda: context.secret(TOKEN_SECRET), context.state_dir)


@hookimpl
def roam_session_sinks() -> Iterator[SinkPlugin]:
    yield SinkPlugin(
        name="example",
        summary="each finished turn POSTed as JSON to a webhook (a template to copy)",
        factory=_factory,
        settings=SETTINGS,
    )
