"""Blob payload encoding: one codec byte, then raw or zstd-compressed bytes."""

from __future__ import annotations

import threading
from typing import Any

from roam_core.errors import IntegrityError

CODEC_RAW = 0
CODEC_ZSTD = 1
#: Bytes probed to decide whether compressing a chunk pays.
PROBE_BYTES = 64 * 1024
#: Compress only when the probe shrinks below this ratio.
WORTH_IT = 0.9
MAX_DECOMPRESSED = 64 * 1024 * 1024


_local = threading.local()


def _zstd(kind: str) -> Any:
    """This thread's zstd `compressor` or `decompressor`, made once.

    Making one per chunk cost as much as compressing a small chunk.
    """
    found = getattr(_local, kind, None)
    if found is None:
        import zstandard

        found = zstandard.ZstdCompressor(level=3) if kind == "compressor" \
            else zstandard.ZstdDecompressor()
        setattr(_local, kind, found)
    return found


def encode(data: bytes) -> bytes:
    """Compress `data` when a quick probe says it pays; prefix the codec byte."""
    if len(data) >= 128:
        compressor = _zstd("compressor")
        if len(data) <= PROBE_BYTES:  # small: the probe would be the whole thing
            packed = compressor.compress(data)
            if len(packed) < len(data) * WORTH_IT:
                return bytes([CODEC_ZSTD]) + packed
            return bytes([CODEC_RAW]) + data
        probe = data[:PROBE_BYTES]
        if len(compressor.compress(probe)) < len(probe) * WORTH_IT:
            packed = compressor.compress(data)
            if len(packed) < len(data):
                return bytes([CODEC_ZSTD]) + packed
    return bytes([CODEC_RAW]) + data


def decode(payload: bytes, what: str) -> bytes:
    """Undo `encode`; a malformed payload is an `IntegrityError` naming `what`."""
    if not payload:
        raise IntegrityError(f"integrity error: {what} has an empty payload")
    codec = payload[0]
    if codec == CODEC_RAW:
        return payload[1:]
    if codec == CODEC_ZSTD:
        import zstandard

        try:
            return _zstd("decompressor").decompress(memoryview(payload)[1:],
                                              max_output_size=MAX_DECOMPRESSED)
        except zstandard.ZstdError as error:
            raise IntegrityError(f"integrity error: {what} does not decompress: {error}") from None
    raise IntegrityError(f"integrity error: {what} uses unknown codec {codec}")
