"""Fixtures for the Hermes plugin's tests: homes with a local store, and the real Hermes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.hermes_env import (  # noqa: F401
    clean_roam_env,
    hermes_homes,
    hermes_venv,
    stub_model,
)


def new_key() -> str:
    return os.urandom(32).hex()


def write_config(root: Path, settings: dict[str, Any], extra: str = "") -> None:
    """A root config.yaml with roam's settings block (and any other YAML before it)."""
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    block = {"plugins": {"entries": {"roam": {"settings": settings}}}}
    (root / "config.yaml").write_text(extra + yaml.safe_dump(block, sort_keys=False))




@pytest.fixture
def archive_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = new_key()
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", key)
    return key


@pytest.fixture
def make_home(tmp_path: Path, archive_key: str) -> Callable[..., Path]:
    """Root homes sharing one local store under tmp_path (the key is in the environment)."""
    store = tmp_path / "store"

    def make(name: str, **settings: Any) -> Path:
        root = tmp_path / name / ".hermes"
        write_config(root, {"device_name": name, "backend": "local",
                            "local_dir": str(store), **settings})
        return root

    return make
