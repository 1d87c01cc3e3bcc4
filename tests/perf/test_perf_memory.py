"""Bounded memory: pushing and pulling a 1 GiB file stays under 200 MiB RSS (issue 12, #5).

The CLI runs in a subprocess measured by `roam_core.testing.rss` (a small launcher reaps it
with `os.wait4`): reaped straight from this test worker, the child would report the
worker's own peak RSS, which Linux folds into a child's at `exec`. Slow (a GiB each way),
so marked; no timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from roam_core.testing.rss import run_measured

LIMIT_MIB = 200
SIZE = 1 << 30


def _peak_rss_mib(device: Device, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = device.key
    with tempfile.TemporaryFile() as err:
        measured = run_measured([sys.executable, "-m", "roam_core.cli.main", "--home",
                                 str(device.root), *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        assert measured.code == 0, err.read().decode()
    return measured.peak_mib


def test_the_measure_is_the_command_s_own_peak_not_its_parent_s() -> None:
    # This worker holds 256 MiB; a command that holds nearly nothing must not report it.
    ballast = bytearray(256 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])
    small = run_measured([sys.executable, "-c", "pass"])
    big = run_measured([sys.executable, "-c",
                        "b = bytearray(96 << 20); b[::4096] = b'x' * len(b[::4096])"])
    assert small.code == big.code == 0
    assert small.peak_mib < 64, small
    assert 96 < big.peak_mib < 200, big
    del ballast


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_gib_file_push_and_pull_stay_under_200_mib(tmp_path: Path) -> None:
    settings = {**settings_for("local", tmp_path), "max_file_mb": 2048}
    key = new_key()
    desk = Device(tmp_path / "desk", "desk", settings, key)
    big = desk.root / "skills" / "media" / "weights.bin"
    big.parent.mkdir(parents=True)
    block = os.urandom(8 << 20)  # incompressible, so nothing shrinks the work
    with big.open("wb") as handle:
        for index in range(SIZE // len(block)):
            handle.write(index.to_bytes(8, "big") + block[8:])
    assert desk.roam("init", "--create-remote").code == 0

    pushed = _peak_rss_mib(desk, "push", "--quiet")
    laptop = Device(tmp_path / "laptop", "laptop", settings, key)
    assert laptop.roam("init").code == 0
    pulled = _peak_rss_mib(laptop, "pull", "--apply", "--quiet")

    copy = laptop.root / "skills" / "media" / "weights.bin"
    assert copy.stat().st_size == SIZE
    assert pushed <= LIMIT_MIB, f"push peaked at {pushed:.0f} MiB"
    assert pulled <= LIMIT_MIB, f"pull --apply peaked at {pulled:.0f} MiB"
