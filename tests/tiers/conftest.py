"""Fixtures for the optional tiers: clean environment, Hermes homes on one local store."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from roam_core import secrets
from support.hermes_env import hermes_homes, hermes_venv, stub_model  # noqa: F401


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(("ROAM_", "HERMES_")):
            monkeypatch.delenv(name)
    secrets.use_provider(None)
    yield
    secrets.use_provider(None)
