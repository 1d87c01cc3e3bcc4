"""Entry-level merges of entry-structured files, so both machines' additions survive a pull.

`merge_memory(base, local, remote)` merges Hermes's memory files; `merge_file(rel, ...)` with
`merge_formats(manager)` also consults the formats plugins register through the
`roam_merge_formats` hook. Everything here is pure: bytes in, an `EntryMerge` out.
"""

from __future__ import annotations

from roam_core.merge.entries import EntryListMerge, EntryMerge, merge_entry_lists
from roam_core.merge.formats import MEMORY_FORMAT, format_for, merge_file, merge_formats
from roam_core.merge.memory import (
    is_memory_file,
    merge_json_lines,
    merge_memory,
    parse_entries,
    render_entries,
)

__all__ = [
    "MEMORY_FORMAT",
    "EntryListMerge",
    "EntryMerge",
    "format_for",
    "is_memory_file",
    "merge_entry_lists",
    "merge_file",
    "merge_formats",
    "merge_json_lines",
    "merge_memory",
    "parse_entries",
    "render_entries",
]
