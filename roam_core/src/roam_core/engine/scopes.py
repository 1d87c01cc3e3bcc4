"""The engine's door to the scope model (roam_core.scope)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def load(root: Path, settings: Mapping[str, Any]) -> Any:
    """The scope model of the root home, with every provider's rules and rules.yaml."""
    from roam_core.manager import get_manager
    from roam_core.scope import load_scope

    return load_scope(root, get_manager(), settings)
