"""Reading secrets: Hermes's secret scope inside Hermes, the environment and `.env` outside.

roam never writes a secret anywhere. Outside Hermes the standalone CLI reads the
environment first, then only the `ROAM_*` lines of the root home's `.env`; nothing else in
that file is ever parsed into memory. Inside Hermes the plugin installs Hermes's own
`agent.secret_scope.get_secret` with `use_provider`, and `.env` is never read by roam.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

SecretProvider = Callable[[str], "str | None"]

_provider: SecretProvider | None = None
_lock = threading.Lock()


def use_provider(provider: SecretProvider | None) -> None:
    """Route every secret read through `provider` (None restores the standalone lookup)."""
    global _provider
    with _lock:
        _provider = provider


def in_hermes() -> bool:
    """Whether a Hermes secret provider is installed."""
    return _provider is not None


def _dotenv_value(path: Path, name: str) -> str | None:
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        return None
    with handle:
        for raw in handle:
            line = raw.strip()
            if not line.startswith(("ROAM_", "export ROAM_")):
                continue
            line = line.removeprefix("export ").strip()
            key, sep, value = line.partition("=")
            if sep and key.strip() == name:
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                return value
    return None


def get_secret(name: str, root: Path | None = None) -> str | None:
    """The secret called `name`, or None. Only `ROAM_*` names are read from `.env`."""
    provider = _provider
    if provider is not None:
        return provider(name)
    value = os.environ.get(name)
    if value:
        return value
    if root is not None and name.startswith("ROAM_"):
        return _dotenv_value(root / ".env", name)
    return None


def reader(root: Path | None) -> Callable[[str], str | None]:
    """A `secret(name)` callable bound to one root home, for `PluginContext`."""
    return lambda name: get_secret(name, root)
