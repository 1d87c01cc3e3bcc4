"""Reusing the base generation's folder trees gives exactly the trees of a full rewrite."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from roam_core import crypto
from roam_core.store.manifest import FileEntry, Manifest
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(os.urandom(32))
FOLDERS = ["", "a", "a/b", "a/b/c", "d", "d/e", "skills", "skills/x", "skills/x/refs"]
NAMES = ["f1", "f2", "SKILL.md", "n.txt"]


def _entry(path: str, version: int) -> FileEntry:
    digest = f"{version:064x}"
    return FileEntry(path, version, 0o644, digest, "shared", ((digest, "packs/aa/x", 0, 1),))


paths = st.builds(lambda folder, name: f"{folder}/{name}" if folder else name,
                  st.sampled_from(FOLDERS), st.sampled_from(NAMES))
manifests = st.dictionaries(paths, st.integers(0, 3), max_size=25).map(
    lambda files: {path: _entry(path, version) for path, version in files.items()})


@settings(max_examples=200, deadline=None)
@given(base=manifests, new=manifests, keep=st.lists(paths, max_size=25))
def test_reused_trees_equal_a_full_rewrite(base: Manifest, new: Manifest,
                                           keep: list[str]) -> None:
    # the new generation keeps some base entries unchanged, so whole folders stay equal
    new = {**new, **{path: base[path] for path in keep if path in base}}
    if not base or not new:
        return
    backend = MemoryBackend()
    writer = Repository(backend, KEYS)
    base_root = writer.write_manifest(base)
    base_folders = writer.folders[base_root]

    reused = Repository(backend, KEYS)
    reused.seen_trees.update(base_folders.values())
    root = reused.write_manifest(new, base, base_folders)
    full = Repository(backend, KEYS).write_manifest(new)
    assert root == full
    reader = Repository(backend, KEYS)
    assert reader.load_manifest(root) == new
    assert reused.folders[root] == reader.folders[root]
