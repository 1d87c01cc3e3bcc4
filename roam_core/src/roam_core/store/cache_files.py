"""The device's caches of store objects: files whose loss or damage only costs a re-read."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from roam_core import boundedjson
from roam_core.store.catalog import compact
from roam_core.store.manifest import BlobRef, is_hex64

#: One index's (blob refs, tree refs), each a `roam_core.store.catalog.RefTable`.
Entries = tuple[Sequence[BlobRef], Sequence[BlobRef]]


def read_known(path: Path) -> dict[str, Entries]:
    """The index cache: index id → (blob refs, tree refs), each a compact `RefTable`.

    A line is `[id, blobs]`, or `[id, blobs, trees]` for a tree pack; a damaged line is
    dropped (that index is read again). Read line by line, each line's refs packed into
    arrays at once (`roam_core.store.catalog`): at 100,000 files the parsed lists were the
    largest part of a push's memory (issue 22), and of a prune's or a rotation's (issue 23).
    """
    known: dict[str, Entries] = {}
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                entry = _known_entry(line)
                if entry is not None:
                    known[entry[0]] = entry[1]
    except (OSError, ValueError):
        pass  # what was read so far stands; the rest is read from the store again
    return known


def _known_entry(line: str) -> tuple[str, Entries] | None:
    try:
        index_id, refs, *rest = boundedjson.loads(line, "index cache")
    except (ValueError, TypeError):
        return None
    trees = rest[0] if len(rest) == 1 else None if rest else []
    if not (is_hex64(index_id) and _refs(refs) and _refs(trees)):
        return None
    try:
        return index_id, (compact(refs), compact(trees))  # type: ignore[arg-type]
    except ValueError:
        return None


def _refs(refs: object) -> bool:
    return isinstance(refs, list) and all(isinstance(ref, list) and len(ref) == 4
                                          for ref in refs)


def write_known(path: Path, lines: Iterable[str], *, append: bool) -> None:
    """Append `lines` to the index cache, or (not `append`) replace it with them.

    Written a line at a time: the whole cache as one string was three copies of every
    blob's JSON at once when a device first reads a large store (issue 23).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            with path.open("ab") as handle:  # a torn last line is dropped when read
                for line in lines:
                    handle.write(f"{line}\n".encode())
            return
        temp = _temp_of(path)
        with temp.open("wb") as handle:
            for line in lines:
                handle.write(f"{line}\n".encode())
        os.replace(temp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower


def write_cache(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = _temp_of(path)
        temp.write_bytes(data)
        os.replace(temp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower


def _temp_of(path: Path) -> Path:
    # per thread too: trees and indexes are read (and cached) by several threads at once
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
