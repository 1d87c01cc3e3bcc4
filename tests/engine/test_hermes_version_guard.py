"""The Hermes version guard (issue 25, item 2).

Each device's Hermes is what its Python environment has installed: a `hermes_agent-X.dist-info`
on sys.path is exactly how the installed package announces its version to roam.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from fleet import Device


@contextlib.contextmanager
def hermes_installed(tmp_path: Path, version: str) -> Iterator[None]:
    """This Python sees hermes-agent `version` installed for the duration."""
    where = tmp_path / f"site-{version}"
    info = where / f"hermes_agent-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: hermes-agent\n"
                                   f"Version: {version}\n")
    sys.path.insert(0, str(where))
    try:
        yield
    finally:
        sys.path.remove(str(where))


def two_devices(make_device: Callable[..., Device], tmp_path: Path,
                newer: str) -> tuple[Device, Device]:
    desk, laptop = make_device("desk"), make_device("laptop")
    with hermes_installed(tmp_path, "0.19.0"):
        desk.roam("init", "--create-remote")
        laptop.roam("init")
    with hermes_installed(tmp_path, newer):
        desk.write("SOUL.md", "from a newer Hermes\n")
        assert desk.roam("push").code == 0
    return desk, laptop


def test_a_pull_from_a_newer_hermes_minor_is_refused(make_device: Callable[..., Device],
                                                     tmp_path: Path) -> None:
    _desk, laptop = two_devices(make_device, tmp_path, "0.21.2")
    with hermes_installed(tmp_path, "0.19.0"):
        preview = laptop.roam("pull")
        assert preview.code == 0                       # looking is always allowed
        refused = laptop.roam("pull", "--apply")
        assert refused.code == 1
        line = refused.err.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line
        assert "0.21.2" in line and "0.19.0" in line and "hermes update" \
            in line and "allow_newer_hermes" in line
        assert not laptop.exists("SOUL.md")
        doctor = laptop.roam("doctor")
        assert "warn" in doctor.out and "0.21.2" in doctor.out
        laptop.roam("config", "set", "allow_newer_hermes", "true")
        assert laptop.roam("pull", "--apply").code == 0
    assert laptop.read("SOUL.md") == "from a newer Hermes\n"


def test_a_newer_patch_release_proceeds(make_device: Callable[..., Device],
                                        tmp_path: Path) -> None:
    _desk, laptop = two_devices(make_device, tmp_path, "0.19.7")
    with hermes_installed(tmp_path, "0.19.0"):
        assert laptop.roam("pull", "--apply").code == 0
        doctor = laptop.roam("doctor")
    assert laptop.read("SOUL.md") == "from a newer Hermes\n"
    assert "newest Hermes" in doctor.out
