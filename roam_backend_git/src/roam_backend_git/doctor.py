"""`roam doctor` rows for the git backend: git itself, the remote, sizes, credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roam_backend_git.config import url_has_credentials
from roam_backend_git.runner import GitRunner
from roam_core.plugin import DoctorCheck, RoamError

if TYPE_CHECKING:
    from roam_backend_git.backend import GitBackend


def _git_version(backend: GitBackend) -> DoctorCheck:
    runner = backend.mirror.git
    bare = GitRunner(None, runner.env, runner.redact, runner.fallback_deadline,
                     runner.transport)
    try:
        out = bare.run(["version"], action="version", cap=10).stdout.decode().strip()
    except RoamError as error:
        return ("git installed", False, str(error))
    return ("git installed", True, out)


def _remote(backend: GitBackend) -> DoctorCheck:
    settings = backend.settings
    name = f"remote answers ({settings.public_remote})"
    try:
        tip = backend.remote_tip()
    except RoamError as error:
        return (name, False, str(error))
    if tip is None:
        return (name, True, f"branch {settings.branch} does not exist yet "
                            "(roam init --create-remote creates it)")
    return (name, True, f"branch {settings.branch} at {tip[:12]}")


def _sizes(backend: GitBackend) -> DoctorCheck:
    mb = backend.settings.max_object_mb
    detail = (f"objects are capped at {mb} MiB (git_max_object_mb) and roam splits packs to "
              "fit; git hosts cap file sizes (GitHub warns at 50 MiB and refuses 100 MiB, "
              "GitLab and others vary) and whole-repository sizes, so keep it under your "
              "host's limit")
    return ("object size limit", True, detail)


def _credentials(backend: GitBackend) -> DoctorCheck | None:
    if not url_has_credentials(backend.settings.remote):
        return None
    return ("no credentials in git_remote", False,
            "git_remote carries a password or token; remove it and use an ssh key or a git "
            "credential helper (roam never stores credentials)")


def checks(backend: GitBackend) -> list[DoctorCheck]:
    """Every row, each check isolated so one failure never hides the others."""
    rows = [_git_version(backend), _remote(backend), _sizes(backend)]
    credentials = _credentials(backend)
    if credentials is not None:
        rows.append(credentials)
    return rows
