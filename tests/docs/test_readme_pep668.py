"""The README's line for a system Python that refuses `pip install` (PEP 668), run as written.

On the machine's stock system Python (`/usr/bin/python3`, externally managed on Debian 12
and Ubuntu 23.04+): the README's first command is refused there, and after the README's
venv line the same `python3 -m pip install uv` works. Skipped, with the reason, where there
is no such Python.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from doc_blocks import REPO

SYSTEM_PYTHON = Path("/usr/bin/python3")
INSTALL = "python3 -m pip install uv"


def _venv_line() -> str:
    """The command the Quick start gives for an externally managed Python, as README says it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("## Quick start")
    section = text[start:text.index("\n## ", start + 1)]
    found = re.search(r"externally-managed-environment.*?`(python3 -m venv [^`]+)`", section,
                      re.S)
    assert found, "README's Quick start has no venv line for PEP 668 systems"
    return found.group(1)


def _system_python_reason() -> str | None:
    if not SYSTEM_PYTHON.exists():
        return f"{SYSTEM_PYTHON} is absent"
    stdlib = subprocess.run([str(SYSTEM_PYTHON), "-c",
                             "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                            capture_output=True, text=True, timeout=60).stdout.strip()
    if not (Path(stdlib) / "EXTERNALLY-MANAGED").exists():
        return f"{SYSTEM_PYTHON} is not externally managed (no {stdlib}/EXTERNALLY-MANAGED)"
    return None


def _shell(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`command` in a login-like shell whose `python3` is the system one, HOME a scratch dir."""
    env = {k: v for k, v in os.environ.items()
           if k.startswith("PIP_") and k != "PIP_BREAK_SYSTEM_PACKAGES"}
    env.update(PATH=f"{SYSTEM_PYTHON.parent}:/bin", HOME=str(home), LANG="C.UTF-8")
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_venv_line_is_in_the_quick_start() -> None:
    assert _venv_line() == "python3 -m venv ~/.venvs/roam && . ~/.venvs/roam/bin/activate"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_venv_line_makes_pip_install_work_on_an_externally_managed_python(
        tmp_path: Path) -> None:
    reason = _system_python_reason()
    if reason:
        pytest.skip(reason)
    refused = _shell(INSTALL, tmp_path)
    assert refused.returncode != 0
    assert "externally-managed-environment" in refused.stdout + refused.stderr, refused.stderr
    inside = _shell(f"{_venv_line()} && {INSTALL} && python3 -m uv --version", tmp_path)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.splitlines()[-1].startswith("uv "), inside.stdout
    assert (tmp_path / ".venvs/roam/bin/uv").exists()
