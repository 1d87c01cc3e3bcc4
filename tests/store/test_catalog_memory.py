"""What the index catalogue holds per blob (issue 23): tens of bytes, not a tuple per blob.

At 100,000 blobs the catalogue as lists of `(hex id, pack, offset, length)` tuples, copied
into a dict for the blob table, was ~350 bytes a blob held by every push, stats, prune and
rotation. Counted here with tracemalloc (bytes allocated and still held, whatever the
machine's speed or load) on a store of 60,000 indexed blobs, read from the store and from
the device's index cache.
"""

from __future__ import annotations

import gc
import hashlib
import tracemalloc
from pathlib import Path

import pytest

from roam_core import crypto
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(bytes(range(32)))
INDEXES = 60
PER_INDEX = 1000
BLOBS = INDEXES * PER_INDEX
#: bytes held per blob by the catalogue and the blob table together (48 + 40 in arrays)
HELD_PER_BLOB = 150
#: and at the peak of reading them (one index's parsed refs, the table's sort keys)
PEAK_PER_BLOB = 400


def _store() -> MemoryBackend:
    backend = MemoryBackend()
    writer = Repository(backend, KEYS)
    for number in range(INDEXES):
        pack = f"packs/{number:02x}/" + hashlib.sha256(b"%d" % number).hexdigest()
        writer.write_index(pack, [(hashlib.sha256(b"%d/%d" % (number, at)).hexdigest(), pack,
                                   at * 2048, 2048) for at in range(PER_INDEX)])
    return backend


@pytest.mark.parametrize("source", ["store", "cache"])
def test_the_catalogue_holds_tens_of_bytes_a_blob(tmp_path: Path, source: str) -> None:
    backend = _store()
    if source == "cache":
        Repository(backend, KEYS, tmp_path).index_entries()  # writes indexes/known.jsonl
        assert (tmp_path / "indexes" / "known.jsonl").stat().st_size > BLOBS * 64
    repo = Repository(backend, KEYS, tmp_path)
    gc.collect()
    tracemalloc.start()
    try:
        entries = repo.index_entries()
        known = repo.known_blobs()
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(blobs) for blobs, _trees in entries.values()) == BLOBS
    assert len(known) == BLOBS
    some = hashlib.sha256(b"7/321").hexdigest()
    assert known[some][2:] == (321 * 2048, 2048)
    print(f"catalogue from the {source}: {held / BLOBS:.0f} bytes a blob held, "
          f"{peak / BLOBS:.0f} at the peak")
    assert held / BLOBS < HELD_PER_BLOB, f"{held / BLOBS:.0f} bytes a blob held"
    assert peak / BLOBS < PEAK_PER_BLOB, f"{peak / BLOBS:.0f} bytes a blob at the peak"
