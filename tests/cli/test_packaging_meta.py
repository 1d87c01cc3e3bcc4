"""Packaging facts a test can check without building: licenses, typing, versions, platforms."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

import roam_core
from roam_core.cli.main import main

REPO = Path(__file__).resolve().parents[2]
DISTS = ("roam_core", "roam_backend_local", "roam_backend_s3", "roam_backend_git",
         "roam_sink_discord")


@pytest.mark.parametrize("folder", DISTS)
def test_each_distribution_carries_license_typing_and_a_real_readme(folder: str) -> None:
    project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
    assert (REPO / folder / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO / folder / "src" / folder / "py.typed").exists()
    assert len((REPO / folder / "README.md").read_text().splitlines()) >= 20
    assert {"Operating System :: POSIX", "Typing :: Typed"} <= set(project["classifiers"])
    assert len(project["description"]) <= 120
    assert project["version"] == roam_core.__version__  # released in lockstep
    for requirement in project["dependencies"]:
        if requirement.startswith("roam-core"):
            assert re.fullmatch(r"roam-core>=[\d.]+,<[\d.]+", requirement), requirement


def test_extras_are_quoted_in_every_doc_and_message() -> None:
    unquoted = re.compile(r"pip install roam-core\[")
    found = [str(path.relative_to(REPO)) for pattern in ("**/*.md", "roam_*/src/**/*.py")
             for path in REPO.glob(pattern)
             if ".venv" not in path.parts and unquoted.search(path.read_text())]
    assert found == []


def test_native_windows_fails_with_one_clear_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert main(["status"]) == 1
    err = capsys.readouterr().err
    assert err == "roam: native Windows is not supported (roam needs POSIX file locking); " \
                  "use WSL\n"
