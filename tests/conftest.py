"""Shared fixtures for roam's cross-package tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from roam_core import manager as manager_module


@pytest.fixture(autouse=True)
def _fresh_manager() -> Iterator[None]:
    manager_module.reset_manager()
    yield
    manager_module.reset_manager()
