r"""Hermes's memory files (`memories/MEMORY.md`, `memories/USER.md`), merged entry by entry.

Hermes keeps each file as entries joined by `"\n§\n"` (a line holding only `§`); it reads
them by splitting on that delimiter, stripping each entry and dropping empty ones, and writes
them joined the same way without a trailing newline (tools/memory_tool.py). Roam reads and
writes them exactly so. A file that is not UTF-8 text (or holds NUL bytes) is not an entry
list: the merge returns None and the engine handles it as a whole file.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from roam_core.merge.entries import EntryMerge, merge_entry_lists
from roam_core.scope.patterns import Glob

DELIMITER = "\n§\n"
MEMORY_PATTERNS = (
    "memories/MEMORY.md",
    "memories/USER.md",
    "profiles/*/memories/MEMORY.md",
    "profiles/*/memories/USER.md",
)
_MEMORY_GLOBS = tuple(Glob(pattern) for pattern in MEMORY_PATTERNS)


def is_memory_file(rel: str) -> bool:
    """Whether `rel` is a Hermes memory file, at the top level or in a profile."""
    return any(glob.matches(rel) for glob in _MEMORY_GLOBS)


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def parse_entries(data: bytes) -> list[str] | None:
    """The entries of a `§`-delimited file, or None when it is not an entry list."""
    text = _text(data)
    if text is None:
        return None
    return [entry for entry in (part.strip() for part in text.split(DELIMITER)) if entry]


def render_entries(entries: list[str]) -> bytes:
    """Entries as Hermes writes them."""
    return DELIMITER.join(entries).encode("utf-8")


def _merge(parse: Callable[[bytes], list[str] | None], render: Callable[[list[str]], bytes],
           base: bytes | None, local: bytes, remote: bytes,
           overwrite_conflicts: bool) -> EntryMerge | None:
    """The entry merge of one file format; None when any input does not parse."""
    base_entries = None if base is None else parse(base)
    local_entries = parse(local)
    remote_entries = parse(remote)
    if local_entries is None or remote_entries is None or (base is not None
                                                           and base_entries is None):
        return None
    merged = merge_entry_lists(base_entries, local_entries, remote_entries,
                               overwrite_conflicts=overwrite_conflicts)
    # an unchanged entry list keeps the local bytes exactly (no rewrite, no spurious change)
    data = local if merged.entries == local_entries else render(merged.entries)
    if local.endswith(b"\n") and not data.endswith(b"\n"):
        data += b"\n"  # a file kept with a final newline keeps it (Hermes strips either way)
    return EntryMerge(data, data != local, merged.added_remote, merged.kept_local,
                      merged.conflicts, merged.removed, merged.changed_remote)


def merge_memory(base: bytes | None, local: bytes, remote: bytes, *,
                 overwrite_conflicts: bool = False) -> EntryMerge | None:
    """Three-way merge of a memory file; None when any input is not a valid entry list."""
    return _merge(parse_entries, render_entries, base, local, remote, overwrite_conflicts)


def parse_json_lines(data: bytes) -> list[str] | None:
    """The non-empty lines of a JSON-lines file, or None when a line is not JSON."""
    text = _text(data)
    if text is None:
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        for line in lines:
            json.loads(line)
    except ValueError:
        return None
    return lines


def render_json_lines(lines: list[str]) -> bytes:
    """One JSON document a line, each line ending in a newline."""
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def merge_json_lines(base: bytes | None, local: bytes, remote: bytes, *,
                     overwrite_conflicts: bool = False) -> EntryMerge | None:
    """The same entry merge for JSON-lines files (one JSON document per line)."""
    return _merge(parse_json_lines, render_json_lines, base, local, remote, overwrite_conflicts)
