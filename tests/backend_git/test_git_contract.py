"""The storage contract on real git remotes: file://, git daemon and smart HTTP."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from roam_backend_git.backend import GitBackend
from roam_core.testing.contract import BackendContract


class TestGitContract(BackendContract):
    backend_name = "git"

    @pytest.fixture
    def backend_factory(self, remote_url: str,
                        open_backend: Callable[..., GitBackend]) -> Callable[[], GitBackend]:
        return lambda: open_backend(remote_url)
