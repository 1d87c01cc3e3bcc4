"""Shared fixtures for roam's cross-package tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core import manager as manager_module

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_manager() -> Iterator[None]:
    manager_module.reset_manager()
    yield
    manager_module.reset_manager()


def roam_env(**extra: str) -> dict[str, str]:
    """An environment for running `roam` in a subprocess, without inherited Hermes state."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROAM_", "HERMES_"))}
    env.update(extra)
    return env


def run_roam(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
             input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the real `roam` CLI in a subprocess (same interpreter)."""
    return subprocess.run(
        [sys.executable, "-m", "roam_core.cli.main", *args],
        env=env if env is not None else roam_env(), cwd=cwd, input=input,
        capture_output=True, text=True, timeout=timeout,
    )
