"""Reading secrets: Hermes's secret scope inside Hermes, the environment and `.env` outside.

roam never writes a secret anywhere. A secret is read from Hermes's own
`agent.secret_scope.get_secret` inside Hermes (installed with `use_provider`) or from the
environment outside it, then, for `ROAM_*` names only, from the root home's `.env`.
The mirror's redaction and the push scanner also read every value of the root's and the
active profile's `.env` (`dotenv_values`), for matching only: those values never leave the
process (roam_core.secretscan.literals).
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


def parse_dotenv(text: str) -> dict[str, str]:
    """`NAME=value` lines of a `.env` text (`export`, quotes and comments as shells read them)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key.strip()] = value
    return values


def dotenv_values(path: Path) -> dict[str, str]:
    """Every value of a `.env` file, for matching only; a missing file is empty.

    Raises:
        OSError: when the file exists but cannot be read (callers fail closed).
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    return parse_dotenv(text)


def _dotenv_value(path: Path, name: str) -> str | None:
    try:
        return dotenv_values(path).get(name)
    except OSError:
        return None


def get_secret(name: str, root: Path | None = None) -> str | None:
    """The secret called `name`, or None. Only `ROAM_*` names are read from `.env`.

    Lookup order: Hermes's secret scope when roam runs inside Hermes (the process's own
    home: a profile's `.env` in a profile process), else the environment; then, for `ROAM_*`
    names only, the root home's `.env`, so a profile process finds the root's bot token and
    archive key the same way the default profile does.
    """
    provider = _provider
    value = provider(name) if provider is not None else os.environ.get(name)
    if value:
        return value
    if root is not None and name.startswith("ROAM_"):
        return _dotenv_value(root / ".env", name)
    return None


def reader(root: Path | None) -> Callable[[str], str | None]:
    """A `secret(name)` callable bound to one root home, for `PluginContext`."""
    return lambda name: get_secret(name, root)
