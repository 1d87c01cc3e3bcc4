"""The staging prefetch: contents in op order with their digests, failures handed over,
bounded read-ahead, and no thread left behind when staging stops early."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator

import pytest

from roam_core.engine import prefetch as prefetch_module
from roam_core.engine.journal import Op
from roam_core.errors import IntegrityError


def _op(rel: str, chunks: list[bytes], reads: list[str] | None = None) -> Op:
    def source() -> Iterator[bytes]:
        for chunk in chunks:
            if reads is not None:
                reads.append(rel)
            yield chunk
    return Op(rel, "write", source=source)


def test_contents_arrive_in_op_order_with_their_digests() -> None:
    ops = [_op("a", [b"one", b"two"]), _op("b", []), _op("c", [b"x" * 100_000])]
    prefetch = prefetch_module.Prefetch(ops)
    try:
        for op, expected in zip(ops, (b"onetwo", b"", b"x" * 100_000), strict=True):
            content = prefetch.next_content()
            assert b"".join(content.chunks()) == expected, op.rel
            assert content.digest == hashlib.sha256(expected).hexdigest()
    finally:
        prefetch.close()


def test_a_failing_source_is_raised_where_its_op_is_written() -> None:
    def broken() -> Iterator[bytes]:
        yield b"partial"
        raise IntegrityError("integrity error: blob x failed authentication")

    ops = [_op("a", [b"fine"]), Op("b", "write", source=broken)]
    prefetch = prefetch_module.Prefetch(ops)
    try:
        assert b"".join(prefetch.next_content().chunks()) == b"fine"
        with pytest.raises(IntegrityError, match="failed authentication"):
            list(prefetch.next_content().chunks())
    finally:
        prefetch.close()


def test_read_ahead_is_bounded_and_close_stops_the_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefetch_module, "PREFETCH_BYTES", 1000)
    reads: list[str] = []
    ops = [_op(f"f{n}", [b"y" * 400], reads) for n in range(50)]
    prefetch = prefetch_module.Prefetch(ops)
    deadline = time.monotonic() + 5
    while len(reads) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert 2 <= len(reads) <= 4  # about 1000 bytes ahead, never the whole list
    prefetch.close()
    assert not prefetch._thread.is_alive()


def test_the_writer_takes_the_lock_per_batch_not_per_file() -> None:
    import threading

    ops = [_op(f"f{n}", [b"z" * 10]) for n in range(2000)]
    prefetch = prefetch_module.Prefetch(ops)
    taker = threading.current_thread()
    locked: list[int] = []

    class Counted:
        """The prefetch's condition, counting how often the writer's thread takes it."""

        def __init__(self, inner: threading.Condition) -> None:
            self.inner = inner

        def __enter__(self) -> object:
            if threading.current_thread() is taker:
                locked.append(1)
            return self.inner.__enter__()

        def __exit__(self, *exc: object) -> None:
            self.inner.__exit__(*exc)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    prefetch._ready = Counted(prefetch._ready)  # type: ignore[assignment]
    # the reader first has everything ready (20 KB, far below its bound): on a loaded
    # machine a reader preempted between items would let the writer find a few at a time,
    # and the count would measure the scheduler, not the hand-over
    deadline = time.monotonic() + 30
    while not prefetch._done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert prefetch._done
    try:
        for _ in ops:
            assert b"".join(prefetch.next_content().chunks()) == b"z" * 10
    finally:
        prefetch.close()
    # 4,000 items (a chunk and a digest per file) in batches of WAKE_ITEMS or more
    assert len(locked) <= 2 * 4000 // prefetch_module.WAKE_ITEMS + 4, len(locked)
