"""Trees are written as text, to the letter what `canonical` wrote from their dicts.

A tree's id is the keyed hash of its bytes, so another spelling of the same folder would be
a new tree: the next push would write every folder again, and a tree an older roam wrote
would never be recognised as the same. These hold the text writers (`node_text`,
`folder_text`, `tree_text`, `NewManifest.node_text`) and `write_manifest` to the dicts.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from roam_core import crypto
from roam_core.engine.outgoing import NewManifest
from roam_core.store.manifest import FileEntry, folder_text, node_text, tree_text
from roam_core.store.objects import canonical
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(bytes(range(32)))
#: Names a home may hold: quotes, backslashes, accents, emoji, case, dots, spaces.
NAMES = ["SKILL.md", "a", "A", "a.b", "a b", "ä", "é.txt", 'say "hi"', "back\\slash", "x😀y",
         "zz", "_", "-", "~", "中文", "日本語.md", "\u00a0nbsp", "tab\tname", "1", "10", "9"]


def _hex(rng: random.Random) -> str:
    return rng.randbytes(32).hex()


def _entry(rng: random.Random, path: str, blobs: int = 1, scope: str = "shared") -> FileEntry:
    return FileEntry(path, rng.randrange(0, 1 << 40), rng.choice([0o644, 0o755, 0o600, 0]),
                     _hex(rng), scope, tuple((_hex(rng), _hex(rng), rng.randrange(1 << 33),
                                              rng.randrange(1, 1 << 24)) for _ in range(blobs)))


@pytest.mark.parametrize("blobs", [0, 1, 3])
@pytest.mark.parametrize("scope", ["shared", "host", 'odd "scope" é'])
def test_a_file_node_is_the_text_canonical_wrote(blobs: int, scope: str) -> None:
    rng = random.Random(blobs)
    entry = _entry(rng, "skills/x/SKILL.md", blobs, scope)
    assert node_text(entry) == canonical({"t": "f", **entry.as_json()}).decode()


@pytest.mark.parametrize("note", [None, "repair 2026-12-06", 'a "note" é'])
def test_a_tree_is_the_text_canonical_wrote(note: str | None) -> None:
    rng = random.Random(7)
    entries: dict[str, Any] = {}
    nodes: dict[str, str] = {}
    for name in rng.sample(NAMES, len(NAMES)):  # insertion order is not the written order
        if rng.random() < 0.3:
            tree_id = _hex(rng)
            entries[name] = {"t": "d", "tree": tree_id}
            nodes[name] = folder_text(tree_id)
        else:
            entry = _entry(rng, name, rng.randrange(1, 3))
            entries[name] = {"t": "f", **entry.as_json()}
            nodes[name] = node_text(entry)
    value: dict[str, Any] = {"v": 1, "entries": entries}
    if note is not None:
        value["note"] = note
    assert tree_text(nodes, note) == canonical(value)
    assert tree_text({}, note) == canonical({"v": 1, "entries": {}} | (
        {} if note is None else {"note": note}))


def test_a_new_manifest_s_rows_are_written_as_their_entries_would_be() -> None:
    rng = random.Random(3)
    kept = {"kept/many.bin": _entry(rng, "kept/many.bin", 2),
            "kept/host.yaml": _entry(rng, "kept/host.yaml", 1, "host")}
    new = NewManifest(dict(kept))
    for name in sorted(NAMES):
        new.add(_entry(rng, f"sent/{name}"))
    for rel in new:
        assert new.node_text(rel) == node_text(new[rel]), rel
    with pytest.raises(KeyError):
        new.node_text("sent/missing")


def _dict_tree_ids(manifest: dict[str, FileEntry]) -> str:
    """The root tree id as a push wrote it from dicts before trees were text."""
    root: dict[str, Any] = {}
    for path, entry in manifest.items():
        node = root
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = entry

    def write(node: dict[str, Any]) -> str:
        entries = {name: {"t": "f", **child.as_json()} if isinstance(child, FileEntry)
                   else {"t": "d", "tree": write(child)} for name, child in node.items()}
        plain = canonical({"v": 1, "entries": entries})
        return KEYS.name(crypto.KIND_TREE, hashlib.sha256(plain).digest())

    return write(root)


def test_write_manifest_names_every_tree_as_before() -> None:
    rng = random.Random(11)
    manifest: dict[str, FileEntry] = {}
    for number in range(200):
        folder = "/".join(rng.sample(NAMES, rng.randrange(0, 3)))
        path = f"{folder}/{rng.choice(NAMES)}{number}" if folder else f"{rng.choice(NAMES)}{number}"
        manifest[path] = _entry(rng, path, rng.randrange(1, 3))
    new = NewManifest({})
    for rel in sorted(manifest):
        new.add(manifest[rel])
    expected = _dict_tree_ids(manifest)
    assert Repository(MemoryBackend(), KEYS).write_manifest(manifest) == expected
    assert Repository(MemoryBackend(), KEYS).write_manifest(new) == expected
