"""Blobs are read per pack span: few requests, several in flight, a window of bytes held."""

from __future__ import annotations

import os
import threading
import time

import pytest

from roam_core import crypto
from roam_core.errors import IntegrityError
from roam_core.store.manifest import BlobRef
from roam_core.store.objects import CHUNK_SIZE, PACK_TARGET
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository
from roam_core.store.spans import Span, SpanReader, plan_spans, span_policy
from roam_core.testing.memory import MemoryBackend


def _ref(pack: str, offset: int, length: int, name: str = "b") -> BlobRef:
    return (f"{name}{offset}", pack, offset, length)


def test_consecutive_blobs_of_one_pack_make_one_span() -> None:
    refs = [_ref("p1", 0, 10), _ref("p1", 10, 5), _ref("p1", 15, 5), _ref("p2", 0, 7),
            _ref("p1", 20, 5)]
    spans = plan_spans(refs)
    assert [(s.pack, s.start, s.end, len(s.refs)) for s in spans] == [
        ("p1", 0, 20, 3), ("p2", 0, 7, 1), ("p1", 20, 25, 1)]


def test_a_span_stops_at_its_size_a_wide_gap_and_a_step_back() -> None:
    assert len(plan_spans([_ref("p", 0, 60), _ref("p", 60, 60)], limit=100)) == 2
    assert len(plan_spans([_ref("p", 0, 10), _ref("p", 500, 10)], gap=100)) == 2
    assert len(plan_spans([_ref("p", 0, 10), _ref("p", 50, 10)], gap=100)) == 1
    assert len(plan_spans([_ref("p", 50, 10), _ref("p", 0, 10)])) == 2
    # the same blob twice (two files with equal content) is read once per use
    twice = plan_spans([_ref("p", 0, 10), _ref("p", 0, 10)])
    assert len(twice) == 1 and len(twice[0].refs) == 2


def test_on_a_remote_store_a_whole_pack_is_one_span() -> None:
    # a pack of 4 MiB chunks: filled to its target, its last sealed blob overshoots it
    sealed = CHUNK_SIZE + 45
    refs = [_ref("p", n * sealed, sealed) for n in range(-(-PACK_TARGET // sealed))]
    remote, local = span_policy(remote=True), span_policy(remote=False)
    assert len(plan_spans(refs, remote.limit, remote.gap)) == 1
    # a text pack, its small blobs read through the gaps of blobs another device holds
    small = [_ref("p", n * 70_000, 50_000) for n in range(PACK_TARGET // 70_000)]
    assert len(plan_spans(small, remote.limit, remote.gap)) == 1
    # a local read costs no round trip: smaller spans, less held
    assert len(plan_spans(refs, local.limit, local.gap)) == len(refs)
    # two whole packs ahead: one is read while another is decoded
    assert remote.window >= 2 * remote.limit and remote.workers > 1 and local.workers == 1


def test_reads_run_in_parallel_within_a_window_and_come_back_in_order() -> None:
    spans = [Span("p", n * 100, n * 100 + 100, [_ref("p", n * 100, 100)]) for n in range(40)]
    lock = threading.Lock()
    state = {"busy": 0, "peak": 0, "read": 0, "taken": 0, "ahead": 0}

    def read(span: Span) -> list[object]:
        with lock:
            state["busy"] += 1
            state["peak"] = max(state["peak"], state["busy"])
            state["read"] += span.size
            state["ahead"] = max(state["ahead"], state["read"] - state["taken"])
        time.sleep(0.005)
        with lock:
            state["busy"] -= 1
        return [span.start]

    got = []
    for ref, result in SpanReader(spans, read, workers=4, window=350):
        with lock:
            state["taken"] += 100
        got.append((ref[2], result))
    assert got == [(n * 100, n * 100) for n in range(40)]
    assert state["peak"] > 1
    assert state["ahead"] <= 400  # the window plus the span being taken


def _packed(count: int) -> tuple[Repository, MemoryBackend, list[BlobRef]]:
    backend = MemoryBackend()
    repo = Repository(backend, crypto.Keys.derive(bytes(range(32))))
    packer = Packer(repo, {}, workers=1)
    blobs = [os.urandom(3000) for _ in range(count)]
    ids = [packer.add_chunk(data) for data in blobs]
    packer.finish()
    return repo, backend, list(packer.refs(tuple(ids)))


def test_read_blobs_reads_each_pack_once_and_checks_every_blob() -> None:
    repo, backend, refs = _packed(30)
    reads: list[str] = []
    original = backend.get

    def spy(key: str, offset: int = 0, length: int | None = None) -> bytes:
        reads.append(key)
        return original(key, offset, length)

    backend.get = spy  # type: ignore[method-assign]
    blobs = list(repo.read_blobs(refs))
    assert [data for data, _digest in blobs] == [repo.read_blob(ref) for ref in refs]
    assert len([key for key in reads if key.startswith("packs/")]) == 1 + len(refs)


def test_a_tampered_blob_in_a_span_is_an_integrity_error() -> None:
    repo, backend, refs = _packed(5)
    pack = refs[2][1]
    data = bytearray(backend.get(pack))
    data[refs[2][2] + 20] ^= 1
    backend.store.objects[pack] = bytes(data)
    with pytest.raises(IntegrityError, match="blob"):
        list(repo.read_blobs(refs))
