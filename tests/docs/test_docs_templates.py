"""The `_template/` distributions, installed as a plugin author would, pass their own tests.

Both are copied out of the repository, installed editable with uv (offline, no dependency
resolution) into a fresh virtual environment that sees this workspace's roam-core and test
tools, and their test suites run there: the conformance suites as shipped, plus roam finding
each plugin through its entry point.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = ("roam_backend_example", "roam_sink_example")


def _uv_command() -> list[str]:
    """uv itself: the one running us (`uv run` sets $UV), on PATH, or python3's module."""
    for found in (os.environ.get("UV"), shutil.which("uv")):
        if found and Path(found).exists():
            return [found]
    for python in (shutil.which("python3"), sys.executable):
        if python and subprocess.run([python, "-m", "uv", "--version"],
                                     capture_output=True).returncode == 0:
            return [python, "-m", "uv"]
    pytest.fail("uv is not installed (python3 -m pip install uv)")


def _uv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_uv_command(), *args], capture_output=True, text=True,
                          timeout=300, env=_clean_env())


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROAM_", "HERMES_", "VIRTUAL_ENV", "UV_PROJECT"))}
    env["UV_OFFLINE"] = "1"  # tests never leave 127.0.0.1
    return env


@pytest.fixture(scope="module")
def author_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python of a fresh venv with both templates installed, folder of the copies)."""
    base = tmp_path_factory.mktemp("template")
    copies = base / "src"
    for name in TEMPLATES:
        shutil.copytree(REPO / "_template" / name, copies / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".venv",
                                                     ".ruff_cache", "*.egg-info"))
    venv = base / "venv"
    made = _uv("venv", "--quiet", "--python", sys.executable, str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    # The workspace's own site-packages (roam-core editable, pluggy, pytest…) as a site dir,
    # so nothing is resolved or downloaded; only the templates are installed.
    workspace_site = sysconfig.get_paths()["purelib"]
    Path(site.stdout.strip(), "roam_workspace.pth").write_text(
        f"import site; site.addsitedir({workspace_site!r})\n")
    installed = _uv("pip", "install", "--quiet", "--offline", "--no-deps", "--python",
                    str(python), *(arg for name in TEMPLATES
                                   for arg in ("-e", str(copies / name))))
    assert installed.returncode == 0, installed.stderr
    return python, copies


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_passes_its_tests_when_installed(author_env: tuple[Path, Path],
                                                  name: str) -> None:
    python, copies = author_env
    result = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-x"], cwd=copies / name, capture_output=True, text=True,
                            timeout=300, env=_clean_env())
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout
    assert "skipped" not in result.stdout  # the contract runs whole, nothing excused


def test_templates_are_not_workspace_members() -> None:
    import tomllib

    root = tomllib.loads((REPO / "pyproject.toml").read_text())
    members = root["tool"]["uv"]["workspace"]["members"]
    assert not any("_template" in member or "example" in member for member in members)
