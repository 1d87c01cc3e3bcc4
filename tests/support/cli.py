"""Running the real `roam` CLI in a subprocess with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def roam_env(**extra: str) -> dict[str, str]:
    """An environment for running `roam` in a subprocess, without inherited roam/Hermes state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
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
