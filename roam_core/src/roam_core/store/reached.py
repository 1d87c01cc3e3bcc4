"""`cache/trees/reached.json`: the folder → tree map of the generation this device is on.

Rewritten whole, the note grew with the home's folders, not with a push's change (165 KB
for a push of ten files at 5,000 files, issue 22). It is JSON lines now: the first line is
a whole map (`{"snapshot", "root", "folders"}`, the form an earlier roam wrote as the whole
file), each later line what one generation changed from the one before it
(`{"snapshot", "root", "from", "set", "drop"}`), appended. A line that does not continue
the chain (torn by a crash, damaged, from another generation) ends the replay there: the
note then names an older generation, which a push does not count on, so it reads the trees
back from the store. The log is rewritten whole once it is much larger than one map.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roam_core.store.cache_files import write_cache
from roam_core.store.manifest import is_hex64

#: the log is folded into one map when it is this many times the size of one
COMPACT_AFTER = 4


def recall(path: Path) -> tuple[str, str, dict[str, str]] | None:
    """(snapshot, root, folders) of the last generation the note reaches, or None."""
    found = _replay(path)
    return None if found is None else found[:3]


def remember(path: Path, snapshot: str, root: str, folders: Mapping[str, str]) -> None:
    """Note `folders` for `snapshot`: a line of what changed, or the whole map when due."""
    found = _replay(path)
    whole = json.dumps({"snapshot": snapshot, "root": root, "folders": dict(folders)},
                       separators=(",", ":"))
    if found is None or found[3] + len(whole) > COMPACT_AFTER * len(whole):
        write_cache(path, (whole + "\n").encode())
        return
    last, _root, before, _size = found
    changed = {rel: tree for rel, tree in folders.items() if before.get(rel) != tree}
    gone = sorted(rel for rel in before if rel not in folders)
    line = json.dumps({"snapshot": snapshot, "root": root, "from": last, "set": changed,
                       "drop": gone}, separators=(",", ":"))
    try:
        with path.open("ab") as handle:  # a torn line ends the replay: an older note
            handle.write((line + "\n").encode())
    except OSError:
        pass  # a cache that cannot be written is only slower


def _replay(path: Path) -> tuple[str, str, dict[str, str], int] | None:
    """(snapshot, root, folders, bytes of the log) after every line that chains on."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    state: tuple[str, str, dict[str, str]] | None = None
    for raw in data.split(b"\n"):
        try:
            line = json.loads(raw)
            state = _apply(state, line)
        except (ValueError, TypeError, KeyError, AttributeError):
            break
    if state is None:
        return None
    return (*state, len(data))


def _apply(state: tuple[str, str, dict[str, str]] | None, line: Any
           ) -> tuple[str, str, dict[str, str]]:
    """The map after one line; `ValueError` when the line does not continue `state`."""
    snapshot, root = line["snapshot"], line["root"]
    if state is None:
        folders = line["folders"]
        if not isinstance(folders, dict):
            raise ValueError("no map")
    else:
        if line["from"] != state[0]:
            raise ValueError("not the next generation")
        changed, gone = line["set"], line["drop"]
        if not isinstance(changed, dict) or not isinstance(gone, list):
            raise ValueError("malformed change")
        folders = dict(state[2])
        for rel in gone:
            folders.pop(rel, None)
        folders.update(changed)
    if not (is_hex64(snapshot) and isinstance(root, str) and folders.get("") == root
            and all(isinstance(rel, str) and is_hex64(tree) for rel, tree in folders.items())):
        raise ValueError("malformed map")
    return snapshot, root, folders
