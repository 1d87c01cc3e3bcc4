"""Which folders of a new generation are exactly as in the base, so their trees are kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roam_core.store.manifest import FileEntry, Manifest


class Reuse:
    """Which folders of a new generation are exactly as in the base, and their trees."""

    def __init__(self, base_folders: Mapping[str, str], changed: set[str]) -> None:
        self.base_folders = base_folders
        self.changed = changed

    def keep(self, node: dict[str, Any], path: str, folders: dict[str, str]) -> bool:
        """Record the base trees of an unchanged folder and every folder below it."""
        if path in self.changed or path not in self.base_folders:
            return False
        found: dict[str, str] = {}
        stack = [(node, path)]
        while stack:
            current, where = stack.pop()
            tree = self.base_folders.get(where)
            if tree is None:
                return False  # the note does not match the base: serialise as usual
            found[where] = tree
            stack.extend((child, f"{where}/{name}" if where else name)
                         for name, child in current.items() if isinstance(child, dict))
        folders.update(found)
        return True


def changed_folders(manifest: Mapping[str, FileEntry], base: Manifest) -> set[str]:
    """Every folder ("" for the root) with an entry added, changed or removed below it."""
    changed = {""}

    def mark(path: str) -> None:
        parts = path.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            changed.add("/".join(parts[:end]))

    for path in manifest:
        # a path the base lacks is changed whatever its entry: not made (a push's new rows
        # make each afresh when read, and on a first push that is every file)
        old = base.get(path)
        if old is None or old != manifest[path]:
            mark(path)
    for path in base.keys() - manifest.keys():
        mark(path)
    return changed
