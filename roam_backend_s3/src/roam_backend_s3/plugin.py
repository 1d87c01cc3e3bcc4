"""Storage in S3 or Cloudflare R2 through boto3, conditional writes for compare-and-swap."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from roam_backend_s3.config import SETTINGS, parse_settings, read_credentials
from roam_core.plugin import BackendPlugin, PluginContext, hookimpl

if TYPE_CHECKING:
    from roam_backend_s3.backend import S3Backend


def _factory(settings: Mapping[str, Any], context: PluginContext) -> S3Backend:
    parsed = parse_settings(settings)
    credentials = read_credentials(context.secret)
    # boto3 is imported here, when a backend is opened, never when roam lists its plugins.
    from roam_backend_s3.backend import S3Backend

    return S3Backend(parsed, credentials)


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="s3",
        summary="S3 or Cloudflare R2 through boto3, conditional writes for compare-and-swap",
        factory=_factory,
        settings=SETTINGS,
    )
