"""roam's pack indexer applies git's deltas itself only where their results stay small."""

from __future__ import annotations

import pytest

from roam_backend_git.packindex import BASE_MAX, Damaged, Unsupported, apply_delta


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _copy(start: int, length: int) -> bytes:
    """A copy order: `length` bytes of the base from `start` (two bytes each)."""
    return bytes([0x80 | 0x03 | 0x30]) + start.to_bytes(2, "little") + length.to_bytes(2, "little")


def test_a_delta_is_applied() -> None:
    base = bytes(range(256)) * 4
    delta = _varint(len(base)) + _varint(20) + _copy(10, 16) + bytes([4]) + b"tail"
    assert apply_delta(base, delta) == base[10:26] + b"tail"


def test_a_small_delta_that_would_build_a_huge_result_is_left_to_git() -> None:
    """A remote's delta of a few hundred KiB copying its base over and over could claim any
    size: its result is never built here (it was memory without bound)."""
    base = bytes(1024)
    claimed = 64 * BASE_MAX
    orders = _copy(0, len(base)) * (claimed // len(base))
    assert len(orders) <= BASE_MAX  # small enough to be kept and applied
    with pytest.raises(Unsupported):
        apply_delta(base, _varint(len(base)) + _varint(claimed) + orders)


def test_a_delta_that_builds_another_size_than_it_says_is_damage() -> None:
    base = bytes(1024)
    with pytest.raises(Damaged):
        apply_delta(base, _varint(len(base)) + _varint(100) + _copy(0, 50))
