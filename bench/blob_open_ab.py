"""Opening a pack span's blobs: the copies made before 5265619 against views, alternating.

    python3 -m uv run --all-packages python bench/blob_open_ab.py

A span like the `large` home's (2,000 small blobs and four 4 MiB chunks, 21 MiB) is sealed
in memory, then opened blob by blob as a pull does (authenticate, decode, hash) with the
pull's malloc settings: A copies each blob out of the span and its body out of the blob
(the code before), B decrypts each where it lies (`crypto.open_sealed` on a view). Prints
the median processor time of each over 8 alternating rounds and the load average.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import time

from roam_core import crypto
from roam_core.store import codec
from roam_core.store.malloc import map_large_buffers

map_large_buffers()
key = os.urandom(32)
# a span like the large home's: small text files and 4 MiB chunks of binary
sizes = [3000] * 2000 + [4 << 20] * 4
buf = bytearray()
refs = []
for n, size in enumerate(sizes):
    data = os.urandom(size)
    oid = f"{n:064x}"
    sealed = crypto.seal(key, crypto.KIND_BLOB, oid, codec.encode(data))
    refs.append((oid, len(buf), len(sealed)))
    buf += sealed
span = bytes(buf)


def old_open(sealed: bytes, oid: str) -> bytes:
    header, body = sealed[:crypto.HEADER_BYTES], sealed[crypto.HEADER_BYTES:]
    return crypto._aead(key).decrypt(header[4:], body, header + oid.encode())


def run(new: bool) -> float:
    view = memoryview(span)
    started = time.thread_time()
    for oid, off, length in refs:
        part = view[off:off + length]
        plain = crypto.open_sealed(key, crypto.KIND_BLOB, oid, part, "x") if new \
            else old_open(bytes(part), oid)
        data = codec.decode(plain, "x")
        hashlib.sha256(data).digest()
    return time.thread_time() - started


times: dict[bool, list[float]] = {True: [], False: []}
for round_ in range(8):
    for new in (round_ % 2 == 0, round_ % 2 == 1):
        times[new].append(run(new))
print(f"span of {len(span) >> 20} MiB, {len(refs)} blobs; load {os.getloadavg()[0]:.1f}")
print(f"copies (before): median {statistics.median(times[False]):.3f} s")
print(f"views (after):   median {statistics.median(times[True]):.3f} s")
