"""A three-way merge of entry lists: both sides' additions kept, one-sided edits carried.

Entries have no identity of their own, so each side is aligned with the base (the version
this device last synced) by longest common subsequence; within a replaced run, a side's entry
is the edited form of the base entry it most resembles. Then, per base entry:

- untouched on both sides: kept; deleted on one side and untouched on the other: deleted;
- edited on one side only: the edit; edited the same way on both: kept once;
- edited differently on both, or edited on one side and deleted on the other: a conflict,
  the local state stays and the remote entry is listed (`overwrite_conflicts` takes it).

Added entries are all kept: the local order first, then the remote's new entries in the
remote's order. Exact duplicates are kept once. When one side did not change at all the
result is the other side as it is, so two devices converge on the same bytes.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

#: How alike an edited entry must be to the base entry it replaces (difflib ratio).
EDIT_SIMILARITY = 0.5


@dataclass
class EntryMerge:
    """The outcome of one entry-level merge; `data` is the whole new local file."""

    data: bytes
    changed: bool
    added_remote: int = 0
    kept_local: int = 0
    conflicts: list[str] = field(default_factory=list)
    removed: int = 0
    changed_remote: int = 0


@dataclass
class EntryListMerge:
    """An entry-level merge before serialisation."""

    entries: list[str]
    added_remote: int = 0
    kept_local: int = 0
    conflicts: list[str] = field(default_factory=list)
    removed: int = 0
    changed_remote: int = 0


def _align(base: Sequence[str], side: Sequence[str]) -> tuple[dict[int, int], set[int]]:
    """Map base index to side index for kept or edited entries; also the side's additions."""
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, list(base), list(side), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs.update({i1 + k: j1 + k for k in range(i2 - i1)})
        elif tag == "replace":
            free = list(range(j1, j2))
            for i in range(i1, i2):
                scored = [(difflib.SequenceMatcher(None, base[i], side[j]).ratio(), j)
                          for j in free]
                best = max(scored, default=(0.0, -1))
                if best[0] >= EDIT_SIMILARITY:
                    pairs[i] = best[1]
                    free.remove(best[1])
    return pairs, set(range(len(side))) - set(pairs.values())


def _dedupe(entries: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(entries))


def merge_entry_lists(base: Sequence[str] | None, local: Sequence[str], remote: Sequence[str],
                      *, overwrite_conflicts: bool = False) -> EntryListMerge:
    """Merge two entry lists against their common base (None: never synced, a union)."""
    if base is None:
        merged = _dedupe([*local, *remote])
        return EntryListMerge(merged, added_remote=len(merged) - len(_dedupe(local)))
    local_pairs, _ = _align(base, local)
    remote_pairs, remote_added = _align(base, remote)
    result = EntryListMerge([])
    paired_local = {j: i for i, j in local_pairs.items()}
    for j, entry in enumerate(local):
        i = paired_local.get(j)
        if i is None:
            result.entries.append(entry)  # added here
            continue
        edited_here = entry != base[i]
        if i not in remote_pairs:  # deleted there
            if edited_here and not overwrite_conflicts:
                result.kept_local += 1
                result.conflicts.append(f"(deleted remotely) {entry}")
                result.entries.append(entry)
            else:
                result.removed += 1
            continue
        theirs = remote[remote_pairs[i]]
        if theirs == base[i] or theirs == entry:
            result.entries.append(entry)
        elif not edited_here or overwrite_conflicts:
            result.changed_remote += 1
            result.entries.append(theirs)
            if edited_here:
                result.conflicts.append(theirs)
        else:
            result.kept_local += 1
            result.conflicts.append(theirs)
            result.entries.append(entry)
    resurrect: set[int] = set()
    for i, j in remote_pairs.items():
        if i not in local_pairs and remote[j] != base[i]:  # deleted here, edited there
            result.conflicts.append(remote[j])
            if overwrite_conflicts:
                resurrect.add(j)
                result.changed_remote += 1
            else:
                result.kept_local += 1
    present = set(result.entries)
    for j, entry in enumerate(remote):
        if (j in remote_added or j in resurrect) and entry not in present:
            result.entries.append(entry)
            present.add(entry)
            result.added_remote += j in remote_added
    result.entries = _dedupe(result.entries)
    if list(local) == list(base):
        result.entries = _dedupe(remote)  # nothing changed here: take the remote as it is
    elif list(remote) == list(base):
        result.entries = _dedupe(local)
    return result
