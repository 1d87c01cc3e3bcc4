"""STYLE.md: `mypy` on roam_core stays clean (about 5 s uncached)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_mypy_is_clean_on_roam_core(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         str(REPO / "roam_core" / "src" / "roam_core")],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
