"""Prototype: index a fetched pack with hashlib instead of `git index-pack` (issue 22).

    python3 -m uv run --all-packages python bench/git_index_hashlib.py PACK [--runs 3]

A fetch of the whole store spends most of its client-side processor time in `git
index-pack`, which hashes every object with git's collision-detecting SHA-1
(bench/git_sha_cost.py). roam could receive the pack itself (git's protocol v2 through
`git remote-http`'s `stateless-connect` or `git upload-pack` over ssh) and index it as it
arrives. This prototype measures only that second half on a real fetched pack: it reads PACK
sequentially in 64 KiB pieces, as a network stream would come, writes them to a new pack file,
inflates every entry, hashes it with hashlib, checks the trailing checksum and writes a
version-2 index (roam_backend_git.staging.index_v2); then it runs `git index-pack --stdin` on
the same bytes and compares processor time (alternating, medians) and the two indexes byte
for byte. The indexer was this prototype's and is now the backend's own
(roam_backend_git.packindex, used by a new device's first fetch, ownfetch.py): deltas among
commits and trees resolved, a delta against anything else refused (the backend then hands
the written pack to `git index-pack`).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roam_backend_git.packindex import index_stream

__all__ = ["index_stream"]  # bench/git_fetch_hashlib.py takes it from here

def _cpu() -> tuple[float, float]:
    self_ = resource.getrusage(resource.RUSAGE_SELF)
    return self_.ru_utime, self_.ru_stime


def _children() -> tuple[float, float]:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime, kids.ru_stime


def _spent(before: tuple[float, float], after: tuple[float, float]) -> tuple[float, float]:
    return after[0] - before[0], after[1] - before[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pack", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    size = args.pack.stat().st_size
    print(f"pack {args.pack.name}: {size / 2**20:.0f} MiB; git "
          f"{subprocess.run(['git', 'version'], capture_output=True, text=True).stdout.split()[-1]}"
          f"; load {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    ours: list[float] = []
    gits: list[float] = []
    with tempfile.TemporaryDirectory(prefix="git9-index-") as scratch:
        repo = Path(scratch) / "r.git"
        subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
        for run in range(args.runs):
            for side in ("hashlib", "git") if run % 2 == 0 else ("git", "hashlib"):
                os.posix_fadvise(os.open(args.pack, os.O_RDONLY), 0, 0,
                                 os.POSIX_FADV_WILLNEED)
                if side == "hashlib":
                    before, started = _cpu(), time.monotonic()
                    with open(args.pack, "rb") as stream, \
                            open(Path(scratch) / "ours.pack", "wb") as sink:
                        def read(n: int, stream=stream, sink=sink) -> bytes:
                            piece = stream.read(n)
                            sink.write(piece)  # the pack is kept, as index-pack keeps it
                            return piece
                        idx, _end = index_stream(read)
                    out = Path(scratch) / "ours.idx"
                    out.write_bytes(idx)
                    user, system = _spent(before, _cpu())
                    ours.append(user + system)
                    print(f"  hashlib indexer: {ours[-1]:.2f} s processor ({user:.2f} user, "
                          f"{system:.2f} system), "
                          f"{time.monotonic() - started:.2f} s wall", flush=True)
                else:
                    before, started = _children(), time.monotonic()
                    with open(args.pack, "rb") as stream:
                        subprocess.run(["git", f"--git-dir={repo}", "index-pack", "--stdin",
                                        "--threads=1"], stdin=stream, check=True,
                                       stdout=subprocess.DEVNULL)
                    user, system = _spent(before, _children())
                    gits.append(user + system)
                    print(f"  git index-pack --stdin: {gits[-1]:.2f} s processor ({user:.2f} "
                          f"user, {system:.2f} system), "
                          f"{time.monotonic() - started:.2f} s wall", flush=True)
                    theirs = next((repo / "objects" / "pack").glob("*.idx"))
                    same = theirs.read_bytes() == (Path(scratch) / "ours.idx").read_bytes() \
                        if (Path(scratch) / "ours.idx").exists() else None
                    if same is not None:
                        print(f"  indexes identical: {same}")
                    shutil.rmtree(repo / "objects" / "pack")
                    (repo / "objects" / "pack").mkdir()
    print(f"median processor time: hashlib {statistics.median(ours):.2f} s "
          f"({size / 2**20 / statistics.median(ours):.0f} MiB/s), git index-pack "
          f"{statistics.median(gits):.2f} s ({size / 2**20 / statistics.median(gits):.0f} MiB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
