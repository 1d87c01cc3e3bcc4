"""Processor time of staging the large home's packs into the git mirror, two framings (A/B).

    python3 -m uv run --all-packages python bench/git_stage_writes.py [--runs 5]

`whole`: the entry built with `zlib.compress(data, 0)` behind its header and written with one
`pwrite` (the staging before session 9); `blocks`: staging.py's `stored_entry`, the same bytes
framed without copying the data and written a stored block (~64 KiB) at a time. 23 objects
of 16 MiB (368 MiB, the large home's first push), alternating, processor time of this
process (user and system), medians. The files are removed after each run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import zlib
from pathlib import Path

from roam_backend_git.staging import BLOB, entry_header, stored_entry


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def stage(path: Path, blobs: list[bytes], framing: str) -> tuple[float, float]:
    """Write every blob as a pack entry into `path`; (user, system) seconds spent."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    before = _cpu()
    end = 0
    for data in blobs:
        header = entry_header(BLOB, len(data))
        if framing == "whole":
            entry = header + zlib.compress(data, 0)
            zlib.crc32(entry)
            end += os.pwrite(fd, entry, end)
        else:
            writes = stored_entry(header, data)
            crc = 0
            for write in writes:
                for piece in write:
                    crc = zlib.crc32(piece, crc)
            for write in writes:
                end += os.pwritev(fd, write, end)
    after = _cpu()
    os.close(fd)
    return after[0] - before[0], after[1] - before[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    blobs = [os.urandom(16 << 20) for _ in range(23)]
    print("load " + " ".join(f"{value:.2f}" for value in os.getloadavg()))
    totals: dict[str, list[float]] = {"whole": [], "blocks": []}
    scratch = Path(tempfile.mkdtemp(prefix="git9-stage-"))
    try:
        for run in range(args.runs):
            for framing in ("whole", "blocks") if run % 2 == 0 else ("blocks", "whole"):
                path = scratch / f"{framing}-{run}.pack"
                user, system = stage(path, blobs, framing)
                totals[framing].append(user + system)
                print(f"  {framing:<6} {user + system:.2f} s ({user:.2f} user, "
                      f"{system:.2f} system)", flush=True)
                path.unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for framing, values in totals.items():
        print(f"{framing}: median {statistics.median(values):.2f} s of processor time")
    print("load " + " ".join(f"{value:.2f}" for value in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
