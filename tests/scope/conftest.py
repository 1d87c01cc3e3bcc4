"""Helpers for the scope tests: build homes and load their scope model without entry points."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from scope_helpers import bare_manager

from roam_core.manager import PluginManager
from roam_core.scope import ScopeModel, load_scope


@pytest.fixture
def scope_of() -> Callable[..., ScopeModel]:
    def load(root: Path, settings: Mapping[str, Any] | None = None,
             manager: PluginManager | None = None) -> ScopeModel:
        return load_scope(root, manager or bare_manager(), settings if settings is not None
                          else {})
    return load
