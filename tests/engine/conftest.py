from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for


@pytest.fixture(params=["memory", "local"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_device(tmp_path: Path, backend_kind: str) -> Callable[..., Device]:
    settings = settings_for(backend_kind, tmp_path)
    key = new_key()

    def make(name: str, **extra: object) -> Device:
        return Device(tmp_path / name, name, {**settings, **extra}, key)

    return make
