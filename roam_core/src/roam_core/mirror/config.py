"""The mirror's settings, read from the root home's roam settings block."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

_cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
_lock = threading.Lock()


def settings_for(root: Path) -> dict[str, Any]:
    """The effective settings of `root`, re-read only when config.yaml changed."""
    from roam_core.settings import load_settings

    path = root / "config.yaml"
    try:
        stat = os.stat(path)
        key = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = (0, -1)
    with _lock:
        cached = _cache.get(root)
        if cached is not None and cached[0] == key:
            return cached[1]
    settings = load_settings(root)
    with _lock:
        _cache[root] = (key, settings)
    return settings


def enabled_sinks(settings: dict[str, Any]) -> list[str]:
    """The sink names in `mirror_sinks` (a list, or one name); empty means the mirror is off."""
    from roam_core.settings import CoreSettings

    return CoreSettings.build(settings).mirror_sinks
