"""Storage in a private git repository, --force-with-lease for compare-and-swap."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from roam_core.errors import PluginError
from roam_core.hookspecs import hookimpl
from roam_core.storage import Backend
from roam_core.types import BackendPlugin, PluginContext, Setting


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Backend:
    raise PluginError("the git backend is not implemented yet", plugin="git")


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="git",
        summary="a private git repository, --force-with-lease for compare-and-swap",
        factory=_factory,
        settings=(Setting("git_remote", "where the store lives", required=True),),
    )
