"""A home on a local-folder store, for CLI tests that need a set-up fleet."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign.harness import new_key, settings_yaml


class LocalHome:
    """One Hermes home whose store is a folder beside it; `env` carries its archive key."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "home"
        self.root.mkdir()
        (tmp / "store").mkdir()
        settings = {"backend": "local", "local_dir": str(tmp / "store")}
        (self.root / "config.yaml").write_text(settings_yaml("desk", settings))
        self.key = new_key()

    @property
    def env(self) -> dict[str, str]:
        from support.cli import roam_env

        return roam_env(ROAM_ARCHIVE_KEY=self.key)


@pytest.fixture
def local_home(tmp_path: Path) -> LocalHome:
    return LocalHome(tmp_path)
