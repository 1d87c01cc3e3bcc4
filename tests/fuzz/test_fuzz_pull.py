"""A hostile store (authentic, so written by someone holding the key) pulled into a home.

Random trees with names such as `..`, `a/b`, empty or control characters, and a home whose
folder is a symbolic link to the outside: `pull --apply` installs what is safe or refuses
with one line, and never writes a byte outside the home.
"""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from pathlib import Path
from typing import Any

from campaign.harness import Home, Runner, Store, fast_dir, new_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roam_core import crypto
from roam_core.storage import GuardedBackend
from roam_core.store import codec
from roam_core.store.objects import Head, Snapshot, canonical, snapshot_key, tree_key
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend, named_store

names = st.sampled_from(["..", ".", "", "a/b", "../escape", "/abs", "x\x00y", "ok", "skills",
                         "SOUL.md", "memories", "MEMORY.md", "linked", "\u202eevil", "x" * 300])
trees = st.recursive(st.dictionaries(names, st.just("FILE"), min_size=1, max_size=3),
                     lambda inner: st.dictionaries(names, inner | st.just("FILE"),
                                                   min_size=1, max_size=3), max_leaves=10)


def _write_tree(repo: Repository, node: dict[str, Any], blob: dict[str, Any]) -> str:
    entries = {name: ({"t": "d", "tree": _write_tree(repo, child, blob)}
                      if isinstance(child, dict) else {"t": "f", **blob})
               for name, child in node.items()}
    plain = canonical({"v": 1, "entries": entries})
    tree_id = repo.keys.name(crypto.KIND_TREE, hashlib.sha256(plain).digest())
    if not repo.backend.exists(tree_key(tree_id)):
        repo.backend.put_new(tree_key(tree_id), crypto.seal(
            repo.keys.encryption, crypto.KIND_TREE, tree_id, codec.encode(plain)))
    return tree_id


def _publish(store: Store, tree: dict[str, Any]) -> None:
    """Generation 1 holding `tree`, on top of the founder's generation 0."""
    repo = Repository(GuardedBackend(MemoryBackend(named_store(store.settings["memory_store"]))),
                      crypto.Keys.derive(crypto.parse_key(store.key)))
    head = repo.read_head()
    assert head is not None
    packer = Packer(repo, {})
    content = b"written by a hostile store\n"
    sha, size, blob_ids = packer.add_file(io.BytesIO(content))
    packer.finish()
    blob = {"size": size, "mode": 0o644, "sha256": sha, "scope": "shared",
            "blobs": [list(ref) for ref in packer.refs(blob_ids)]}
    root = _write_tree(repo, tree, blob)
    snapshot = Snapshot(1, head.snapshot, "mallory", "2026-01-01T00:00:00+00:00", root, "0")
    snapshot_id = repo.write_snapshot(snapshot)
    repo.write_head(Head(1, snapshot_id, head.store, "mallory", snapshot.created), head.version)
    assert repo.backend.exists(snapshot_key(snapshot_id))


def _listing(folder: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        found[rel] = os.readlink(path) if path.is_symlink() else (
            path.read_bytes() if path.is_file() else "dir")
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, st.booleans())
def test_hostile_tree_never_writes_outside_the_home(tree: dict[str, Any],
                                                    linked: bool) -> None:
    _pull(tree, linked)


def test_the_same_pull_installs_a_benign_tree_and_keeps_a_linked_folder_local() -> None:
    """A folder that is a link here is never written through: its remote entries are a
    conflict kept local (exit 2, named), and the rest of the pull installs."""
    tree = {"SOUL.md": "FILE", "skills": {"a": {"SKILL.md": "FILE"}}}
    installed = _pull(tree, linked=False)
    assert installed.code == 0
    assert {"SOUL.md", "skills/a/SKILL.md"} <= set(installed.files)
    kept = _pull(tree, linked=True)
    assert kept.code == 2 and "skills" in kept.out, (kept.out, kept.err)
    assert "SOUL.md" in kept.files
    assert "skills/a/SKILL.md" not in kept.files  # nothing written through the link


class _Pulled:
    def __init__(self, code: int, out: str, err: str, files: dict[str, bytes | str]) -> None:
        self.code, self.out, self.err, self.files = code, out, err, files


def _pull(tree: dict[str, Any], linked: bool) -> _Pulled:
    with fast_dir("roam-fuzz-pull-") as sandbox:
        outside = sandbox / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("must stay as it is\n")
        store = Store("memory", {"backend": "memory", "memory_store": uuid.uuid4().hex},
                      key=new_key())
        runner = Runner()
        founder = Home(sandbox / "founder", "founder", store, runner)
        assert founder.roam("init", "--create-remote").code == 0
        _publish(store, tree)
        home = Home(sandbox / "home", "home", store, runner)
        if linked:  # a folder of the home that is a link to the outside
            (home.root / "skills").symlink_to(outside, target_is_directory=True)
            (home.root / "linked").symlink_to(outside, target_is_directory=True)
        assert home.roam("init").code == 0
        before = _listing(outside)
        result = home.roam("pull", "--apply")
        assert result.code in (0, 1, 2), result.err
        if result.code == 1:
            assert len(result.err.strip().splitlines()) == 1, result.err
        assert _listing(outside) == before, "the pull wrote outside the home"
        assert sorted(p.name for p in sandbox.iterdir()) == ["founder", "home", "outside"]
        files = _listing(home.root)
        for rel in files:
            assert ".." not in rel.split("/") and "\x00" not in rel
        return _Pulled(result.code, result.out, result.err, files)
