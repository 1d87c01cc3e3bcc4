"""How fast this disk creates files right now: the probe behind the world block's note.

    python bench/fs_create_probe.py DIR

Makes 3,000 folders and 20,000 files of 27 KB (the `large` home's shape) under DIR (which must
not exist yet), then syncs, and prints the wall and system time of each step. On this
machine's ext4 (no journal, online discard) the same work took 0.35 s in a fresh top-level
folder and 2.6 s beside one from which many files had been deleted minutes before: the inode
allocator skips recently freed inodes of the block group (docs/benchmarks.md). DIR is left
in place: deleting it would slow the next run's creation the same way.
"""

from __future__ import annotations

import os
import sys
import time

FOLDERS = 3000
FILES = 20000
FILE_BYTES = 27000


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    base = sys.argv[1]
    os.makedirs(base)
    data = os.urandom(FILE_BYTES)
    started, times = time.perf_counter(), os.times()
    for folder in range(FOLDERS):
        os.mkdir(f"{base}/d{folder}")
    made = time.perf_counter()
    for number in range(FILES):
        fd = os.open(f"{base}/d{number % FOLDERS}/f{number}",
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
    created, after = time.perf_counter(), os.times()
    os.sync()
    print(f"mkdir {FOLDERS}: {made - started:.2f} s  create {FILES}: {created - made:.2f} s  "
          f"user {after.user - times.user:.2f} s  system {after.system - times.system:.2f} s  "
          f"sync {time.perf_counter() - created:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
