"""Real git remotes for the git backend's tests: file://, git daemon, smart HTTP and ssh."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_backend_git.config import parse_settings
from support.git_remotes import bare_repo, ensure_sshd, file_url, git_daemon, smart_http, ssh_server

TRANSPORTS = ("file", "daemon", "http", "ssh")


@pytest.fixture(scope="session")
def served_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory both network servers export; each test adds its own repository."""
    return tmp_path_factory.mktemp("git-served")


@pytest.fixture(scope="session")
def daemon_base(served_root: Path) -> Iterator[str]:
    with git_daemon(served_root) as base:
        yield base


@pytest.fixture(scope="session")
def http_base(served_root: Path) -> Iterator[str]:
    with smart_http(served_root) as base:
        yield base


@pytest.fixture(scope="session")
def ssh_base(served_root: Path) -> Iterator[tuple[str, str]]:
    """A real sshd on 127.0.0.1 (installed with apt when missing) and its GIT_SSH_COMMAND."""
    why = ensure_sshd()
    if why is not None:
        pytest.skip(why)
    with ssh_server(served_root.parent / "ssh-keys") as found:
        yield found


def new_remote(transport: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty repository reachable over `transport`; returns its URL.

    For ssh, the test's environment gets the GIT_SSH_COMMAND carrying the test key, as a
    user's shell would (roam keeps that variable for git and adds its own options).
    """
    if transport == "file":
        return file_url(bare_repo(tmp_path / "remote"))
    if transport == "ssh":
        base, command = request.getfixturevalue("ssh_base")
        request.getfixturevalue("monkeypatch").setenv("GIT_SSH_COMMAND", command)
        return base + str(bare_repo(request.getfixturevalue("served_root")))
    root = request.getfixturevalue("served_root")
    base = request.getfixturevalue("daemon_base" if transport == "daemon" else "http_base")
    return base + bare_repo(root).name


@pytest.fixture
def make_remote(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """Make a fresh empty repository on the named transport; returns its URL."""
    return lambda transport: new_remote(transport, request, tmp_path)


@pytest.fixture(params=TRANSPORTS)
def remote_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty repository, once per transport."""
    return new_remote(request.param, request, tmp_path)


@pytest.fixture
def open_backend(tmp_path: Path) -> Callable[..., GitBackend]:
    """Open a backend as a new device (own mirror) on `url`."""
    counter = iter(range(10**6))

    def opener(url: str, **settings: object) -> GitBackend:
        # the pid keeps devices opened in forked processes (the contract's races) apart
        home = tmp_path / f"device-{os.getpid()}-{next(counter)}"
        parsed = parse_settings({"git_remote": url, **settings}, home)
        return GitBackend(parsed, home / "roam" / "git-mirror")

    return opener
