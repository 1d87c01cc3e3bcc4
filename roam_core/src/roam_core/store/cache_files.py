"""The device's caches of store objects: files whose loss or damage only costs a re-read."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from roam_core import boundedjson
from roam_core.store.manifest import is_hex64


def read_known(path: Path) -> dict[str, tuple[list[list[Any]], list[list[Any]]]]:
    """The index cache: index id → (blob refs, tree refs).

    A line is `[id, blobs]`, or `[id, blobs, trees]` for a tree pack; a damaged line is
    dropped (that index is read again).
    """
    known: dict[str, tuple[list[list[Any]], list[list[Any]]]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return known
    for line in text.splitlines():
        try:
            index_id, refs, *rest = boundedjson.loads(line, "index cache")
        except (ValueError, TypeError):
            continue
        trees = rest[0] if len(rest) == 1 else None if rest else []
        if is_hex64(index_id) and _refs(refs) and _refs(trees):
            known[index_id] = (refs, trees)  # type: ignore[assignment]
    return known


def _refs(refs: object) -> bool:
    return isinstance(refs, list) and all(isinstance(ref, list) and len(ref) == 4
                                          for ref in refs)


def write_known(path: Path, lines: list[str], *, append: bool) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    if not append:
        write_cache(path, data)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:  # a torn last line is dropped when read
            handle.write(data)
    except OSError:
        pass  # a cache that cannot be written is only slower


def write_cache(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # per thread too: trees and indexes are read (and cached) by several threads at once
        temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temp.write_bytes(data)
        os.replace(temp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower
