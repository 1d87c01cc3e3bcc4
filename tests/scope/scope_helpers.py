"""Helpers shared by the scope tests (imported by name: tests/scope is on sys.path)."""

from __future__ import annotations

from pathlib import Path

from roam_core.manager import PluginManager


def write(root: Path, rel: str, data: bytes | str = b"x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def bare_manager() -> PluginManager:
    """A manager that finds no entry points: only core's built-in rules apply."""
    return PluginManager(group="roam.tests.none")
