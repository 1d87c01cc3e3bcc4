"""Storage in a private git repository, --force-with-lease for compare-and-swap."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from roam_backend_git.config import (
    DEFAULT_BRANCH,
    DEFAULT_MAX_OBJECT_MB,
    DEFAULT_MAX_PUSH_MB,
    DEFAULT_TRANSFER_TIMEOUT,
    parse_settings,
)
from roam_core.plugin import Backend, BackendPlugin, PluginContext, Setting, hookimpl

SETTINGS = (
    Setting("git_remote", "the repository: an SSH or HTTPS URL (credentials stay in your ssh "
            "agent or git credential helper) or a local path", required=True),
    Setting("git_branch", "the branch that holds the store", default=DEFAULT_BRANCH),
    Setting("git_transfer_timeout", "seconds one fetch or push may take; one whose bytes "
            "need longer at 256 KiB/s gets that long while they keep coming",
            default=DEFAULT_TRANSFER_TIMEOUT),
    Setting("git_max_object_mb", "largest object roam writes, in MiB (keep under your git "
            "host's file size limit)", default=DEFAULT_MAX_OBJECT_MB),
    Setting("git_max_push_mb", "most MiB of objects one push carries; a larger publish goes "
            "in parts (keep under your git host's push limit: GitHub's is 2 GiB)",
            default=DEFAULT_MAX_PUSH_MB),
)


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Backend:
    parsed = parse_settings(settings, context.home)
    # The backend module (and the git plumbing behind it) loads only when a git store is used.
    from roam_backend_git.backend import GitBackend

    return GitBackend(parsed, context.state_dir / "git-mirror", deadline=context.deadline)


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="git",
        summary="a private git repository, --force-with-lease for compare-and-swap",
        factory=_factory,
        settings=SETTINGS,
    )
