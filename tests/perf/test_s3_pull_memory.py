"""Issue 22: a pull from S3 holds a bounded amount, not a few copies of every pack in flight.

A home of large incompressible files spread over several packs goes to the moto server; a
fresh device's `pull --apply` runs in a subprocess measured by `roam_core.testing.rss`.
Spans on a remote store cover a whole pack (~21 MiB) and a window of two is read ahead, so
the pull's peak must stay near the interpreter's own plus a few spans, whatever the number
of reader threads (each thread's malloc arena once kept its own freed pack buffers).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from fleet import Device, new_key
from roam_core.testing.rss import run_measured
from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)

#: Incompressible files of this size, enough of them to fill several 16 MiB packs.
FILE_BYTES = 6 << 20
FILES = 24
#: The pull's peak RSS bound: the interpreter and its imports (~60 MiB with boto3), two
#: spans read ahead, the one being decoded and the prefetch buffer, with room to spare.
LIMIT_MIB = 170


def test_an_s3_pull_of_several_packs_stays_within_its_window(
        moto_s3: S3Server, tmp_path: Path) -> None:
    settings = moto_s3.settings(moto_s3.fresh_bucket())
    settings["max_file_mb"] = 64
    key = new_key()
    desk = Device(tmp_path / "desk", "desk", settings, key)
    for number in range(FILES):
        desk.write(f"skills/media/blob{number:02d}.bin", os.urandom(FILE_BYTES))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env.update(moto_s3.env(), ROAM_ARCHIVE_KEY=key)
    assert desk.run("init", "--create-remote", env=moto_s3.env()).returncode == 0
    pushed = desk.run("push", env=moto_s3.env(), timeout=300)
    assert pushed.returncode == 0, pushed.stderr
    laptop = Device(tmp_path / "laptop", "laptop", settings, key)
    assert laptop.run("init", env=moto_s3.env()).returncode == 0

    with tempfile.TemporaryFile() as err:
        measured = run_measured([sys.executable, "-m", "roam_core.cli.main", "--home",
                                 str(laptop.root), "pull", "--apply", "--quiet"], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        assert measured.code == 0, err.read().decode()
    pulled = laptop.snapshot_bytes()
    for number in range(FILES):
        name = f"skills/media/blob{number:02d}.bin"
        assert pulled[name] == (desk.root / name).read_bytes(), name
    assert measured.peak_mib <= LIMIT_MIB, f"pull --apply peaked at {measured.peak_mib:.0f} MiB"
