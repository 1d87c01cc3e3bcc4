"""Reading secrets: Hermes's secret scope inside Hermes, the environment and `.env` outside.

roam never writes a secret anywhere. A secret is read from Hermes's own
`agent.secret_scope.get_secret` inside Hermes (installed with `use_provider`) or from the
environment outside it, then, for `ROAM_*` names only, from the root home's `.env`.
The mirror's redaction and the push scanner also read every value of the root's and the
active profile's `.env` (`dotenv_values`), for matching only: those values never leave the
process (roam_core.secretscan.literals). `.env` is parsed by python-dotenv, as Hermes
parses it (quotes, `export`, comments, escapes, multiline values).
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
    """The `NAME=value` pairs of a `.env` text, parsed by python-dotenv as Hermes parses it.

    Quotes, `export`, comments, escapes and multiline values follow python-dotenv (Hermes
    loads the same file with its `load_dotenv`); a name without `=` has no value.
    """
    import io

    from dotenv import dotenv_values as parse

    return {key: value for key, value in parse(stream=io.StringIO(text)).items()
            if value is not None}


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
        return dotenv_values(path).get(name) or None
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
