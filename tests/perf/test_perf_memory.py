"""Bounded memory: pushing and pulling a 1 GiB file stays under 200 MiB RSS (issue 12, #5).

The CLI runs in a subprocess reaped with `os.wait4`, whose rusage gives that process's own
peak RSS. Slow (a GiB each way), so marked; no timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for

LIMIT_MIB = 200
SIZE = 1 << 30


def _peak_rss_mib(device: Device, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = device.key
    process = subprocess.Popen([sys.executable, "-m", "roam_core.cli.main", "--home",
                                str(device.root), *args], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, err.decode()
    return usage.ru_maxrss / 1024


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
