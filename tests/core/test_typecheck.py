"""mypy stays clean on every distribution, the plugin templates included.

The settings (`warn_unused_ignores` among them) come from `[tool.mypy]` in the workspace's
pyproject.toml; the test also passes the flag so it cannot be switched off there unnoticed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Every package that ships: the five distributions and the two templates a plugin author copies.
PACKAGES = (
    "roam_core/src/roam_core",
    "roam_backend_local/src/roam_backend_local",
    "roam_backend_s3/src/roam_backend_s3",
    "roam_backend_git/src/roam_backend_git",
    "roam_sink_discord/src/roam_sink_discord",
    "_template/roam_backend_example/src/roam_backend_example",
    "_template/roam_sink_example/src/roam_sink_example",
)


def _mypy(tmp_path: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         "--warn-unused-ignores", *targets],
        capture_output=True, text=True, cwd=REPO, timeout=600)


def test_every_package_is_listed() -> None:
    shipped = {str(init.parent.relative_to(REPO))
               for pattern in ("roam_*/src/*/__init__.py", "_template/*/src/*/__init__.py")
               for init in REPO.glob(pattern)}
    assert shipped == set(PACKAGES)


def test_mypy_is_clean_on_every_distribution(tmp_path: Path) -> None:
    result = _mypy(tmp_path, *PACKAGES)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_an_unused_ignore_fails(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("x: int = 1  # type: ignore[assignment]\n")
    result = _mypy(tmp_path, str(planted))
    assert result.returncode != 0 and "unused-ignore" in result.stdout, result.stdout
