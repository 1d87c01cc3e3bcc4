"""Storage in S3 or Cloudflare R2 through boto3, conditional writes for compare-and-swap."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from roam_core.errors import PluginError
from roam_core.hookspecs import hookimpl
from roam_core.storage import Backend
from roam_core.types import BackendPlugin, PluginContext, Setting


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Backend:
    raise PluginError("the s3 backend is not implemented yet", plugin="s3")


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="s3",
        summary="S3 or Cloudflare R2 through boto3, conditional writes for compare-and-swap",
        factory=_factory,
        settings=(Setting("s3_bucket", "where the store lives", required=True),),
    )
