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
for byte. Deltas against small objects are resolved (the server's `pack-objects` deltifies
git's own trees); a delta against a large one (roam never writes one, a host's repack might)
is refused: a real implementation would hand such a pack to `git index-pack`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from roam_backend_git.staging import index_v2

PIECE = 1 << 16
#: Objects up to this size are kept as possible delta bases.
KEEP = 1 << 20
TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}


class Refused(Exception):
    """The pack holds something this prototype does not index (a delta, damage)."""


def index_stream(read: object) -> tuple[bytes, int]:
    """Index a pack read piece by piece from `read()`; the .idx bytes and the pack's size."""
    pack_sum = hashlib.sha1(usedforsecurity=False)
    buffer = bytearray()
    eof = False

    def fill(need: int) -> None:
        nonlocal eof
        while len(buffer) < need and not eof:
            piece = read(PIECE)  # type: ignore[operator]
            if not piece:
                eof = True
            buffer.extend(piece)

    fill(12)
    if bytes(buffer[:4]) != b"PACK" or int.from_bytes(buffer[4:8], "big") not in (2, 3):
        raise Refused("not a pack")
    count = int.from_bytes(buffer[8:12], "big")
    pack_sum.update(buffer[:12])
    del buffer[:12]
    offset = 12
    entries: list[tuple[bytes, int, int]] = []
    # small objects kept as delta bases (git's trees and commits; roam's blobs are never bases)
    kept: dict[int, tuple[int, bytes]] = {}
    kept_by_name: dict[bytes, tuple[int, bytes]] = {}
    for _ in range(count):
        fill(16)
        byte = buffer[0]
        kind, size, shift, at = (byte >> 4) & 7, byte & 0x0F, 4, 1
        while byte & 0x80:
            byte = buffer[at]
            size |= (byte & 0x7F) << shift
            shift += 7
            at += 1
        base: tuple[int, bytes] | None = None
        if kind == 6:  # a delta against the entry `distance` bytes before this one
            fill(at + 10)
            byte = buffer[at]
            distance = byte & 0x7F
            at += 1
            while byte & 0x80:
                byte = buffer[at]
                distance = ((distance + 1) << 7) | (byte & 0x7F)
                at += 1
            base = kept.get(offset - distance)
        elif kind == 7:  # a delta against a named object
            fill(at + 20)
            base = kept_by_name.get(bytes(buffer[at:at + 20]))
            at += 20
        elif kind not in TYPES:
            raise Refused(f"entry type {kind} at {offset}")
        if kind in (6, 7) and base is None:
            raise Refused(f"a delta at {offset} against a large or unknown base")
        crc = zlib.crc32(buffer[:at])
        pack_sum.update(buffer[:at])
        del buffer[:at]
        length = at
        digest = None if base else hashlib.sha1(TYPES[kind] + b" %d\0" % size,
                                                usedforsecurity=False)
        inflater = zlib.decompressobj()
        got = 0
        small: list[bytes] | None = [] if size <= KEEP else None
        while not inflater.eof:
            if not buffer:
                fill(1)
                if not buffer:
                    raise Refused("the pack ends inside an entry")
            piece = bytes(buffer)
            data = inflater.decompress(piece)
            used = len(piece) - len(inflater.unused_data)
            crc = zlib.crc32(piece[:used], crc)
            pack_sum.update(piece[:used])
            del buffer[:used]
            length += used
            if digest is not None:
                digest.update(data)
            if small is not None:
                small.append(data)
            got += len(data)
        if got != size:
            raise Refused(f"entry at {offset}: {got} bytes, header says {size}")
        if base is not None:  # small objects only: git's trees and commits
            base_kind, base_data = base
            body = apply_delta(base_data, b"".join(small or ()))
            kind = base_kind
            name = hashlib.sha1(TYPES[kind] + b" %d\0" % len(body) + body,
                                usedforsecurity=False).digest()
            small = [body] if len(body) <= KEEP else None
        else:
            assert digest is not None
            name = digest.digest()
        if small is not None:
            kept[offset] = kept_by_name[name] = (kind, b"".join(small))
        entries.append((name, crc, offset))
        offset += length
    fill(20)
    checksum = bytes(buffer[:20])
    if len(buffer) != 20 or checksum != pack_sum.digest():
        raise Refused("the pack's checksum does not match")
    return index_v2(entries, checksum), offset + 20


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: the base's size, the result's, then copy and insert orders."""
    base_size, at = _varint(delta, 0)
    size, at = _varint(delta, at)
    if base_size != len(base):
        raise Refused("a delta against a base of another size")
    out = bytearray()
    while at < len(delta):
        order = delta[at]
        at += 1
        if order & 0x80:  # copy from the base
            start = length = 0
            for bit in range(4):
                if order & (1 << bit):
                    start |= delta[at] << (8 * bit)
                    at += 1
            for bit in range(3):
                if order & (0x10 << bit):
                    length |= delta[at] << (8 * bit)
                    at += 1
            out += base[start:start + (length or 0x10000)]
        elif order:  # insert the next `order` bytes
            out += delta[at:at + order]
            at += order
        else:
            raise Refused("a delta order 0")
    if len(out) != size:
        raise Refused("a delta's result has another size")
    return bytes(out)


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
