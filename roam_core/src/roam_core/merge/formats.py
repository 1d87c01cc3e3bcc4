"""Which entry-merge format, if any, a path of the home has.

Core's Hermes memory format comes first; then every plugin's `roam_merge_formats` records,
by name. The first format with a matching pattern decides; a path no format names is merged
(or kept as a conflict) as a whole file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from roam_core.merge.entries import EntryMerge
from roam_core.merge.memory import MEMORY_PATTERNS, merge_memory
from roam_core.scope.patterns import Glob
from roam_core.types import MergeFormat

if TYPE_CHECKING:
    from roam_core.manager import PluginManager

MEMORY_FORMAT = MergeFormat(
    name="hermes-memory",
    patterns=MEMORY_PATTERNS,
    merge=merge_memory,
    summary="Hermes memories (MEMORY.md, USER.md): entries separated by a line holding §",
)


def merge_formats(manager: PluginManager | None = None) -> list[MergeFormat]:
    """Core's memory format, then every plugin's formats (sorted by name)."""
    if manager is None:
        from roam_core.manager import get_manager

        manager = get_manager()
    return [MEMORY_FORMAT, *(f for f in manager.merge_formats() if f.name != MEMORY_FORMAT.name)]


def format_for(rel: str, formats: Sequence[MergeFormat]) -> MergeFormat | None:
    """The first format whose patterns match `rel`, or None."""
    for merge_format in formats:
        if any(Glob(pattern).matches(rel) for pattern in merge_format.patterns):
            return merge_format
    return None


def merge_file(rel: str, base: bytes | None, local: bytes, remote: bytes,
               formats: Sequence[MergeFormat], *,
               overwrite_conflicts: bool = False) -> EntryMerge | None:
    """Merge one file through its format; None when it has none or its bytes do not parse."""
    merge_format = format_for(rel, formats)
    if merge_format is None:
        return None
    result = merge_format.merge(base, local, remote, overwrite_conflicts=overwrite_conflicts)
    return result if isinstance(result, EntryMerge) else None
