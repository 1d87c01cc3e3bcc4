"""`roam check`: passes on a healthy store, names each damaged object, never writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key
from campaign.storeview import open_repository

from roam_core.store.objects import pack_key


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Home, Home, Path]]:
    """Two homes on a local store with three generations; yields (a, b, objects folder)."""
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    store = Store("local", {"backend": "local", "local_dir": str(store_dir)}, key=new_key())
    runner = Runner()
    a = Home(tmp_path / "a", "a", store, runner)
    b = Home(tmp_path / "b", "b", store, runner)
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/one/SKILL.md", "one\n" * 500)
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    a.write("SOUL.md", "soul v2\n")
    a.write("memories/MEMORY.md", "remember this")
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    yield a, b, store_dir / "objects"


def _check(home: Home, *args: str) -> tuple[int, dict]:
    result = home.roam("check", "--json", *args)
    return result.code, json.loads(result.out) if result.out.strip() else {}


def _objects(folder: Path, prefix: str) -> list[Path]:
    return sorted(p for p in (folder / prefix).rglob("*") if p.is_file())


def _packed_trees(home: Home, scratch: Path) -> dict[str, list[tuple[str, int]]]:
    """Format 2: each tree pack's key → its trees (id, offset); and each data index under
    the key `index`."""
    with open_repository(home.store, scratch) as repo:
        found: dict[str, list[tuple[str, int]]] = {}
        for copies in repo.tree_places().values():
            for tree_id, pack, offset, _length in copies:
                found.setdefault(pack, []).append((tree_id, offset))
        found["index"] = [(index_id, 0) for index_id, refs in repo.indexes().items() if refs]
        return found


def _tree_packs(home: Home, objects: Path) -> list[Path]:
    return [objects / key for key in sorted(_packed_trees(home, objects.parent / "scratch"))
            if key != "index"]


def _tree_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_healthy_store_passes_and_nothing_is_written(fleet: tuple[Home, Home, Path]) -> None:
    a, b, objects = fleet
    store_before = _tree_of(objects.parent)
    home_before = _tree_of(b.root)
    code, report = _check(b, "--read-data")
    assert code == 0, report
    assert report["ok"] and report["problems"] == []
    assert report["head_generation"] == 2 and report["snapshots"] == 3
    assert report["blobs_read"] == report["blobs"] > 0 and report["unreferenced_packs"] == 0
    assert _tree_of(objects.parent) == store_before
    assert _tree_of(b.root) == home_before  # not even the object cache is filled
    human = a.roam("check")
    assert human.code == 0 and "no problems found" in human.out


def test_a_missing_pack_is_named(fleet: tuple[Home, Home, Path]) -> None:
    a, _b, objects = fleet
    # a data pack (a lost tree pack is named by the trees it held)
    victim = sorted(set(_objects(objects, "packs")) - set(_tree_packs(a, objects)))[0]
    victim.unlink()
    code, report = _check(a)
    assert code == 1
    key = victim.relative_to(objects).as_posix()
    assert any(p["object"] == f"pack {key}" and "missing" in p["message"]
               for p in report["problems"]), report["problems"]
    human = a.roam("check")
    assert human.code == 1 and f"error: pack {key}: is missing" in human.out


def test_flipped_pack_byte_needs_read_data(fleet: tuple[Home, Home, Path]) -> None:
    a, _b, objects = fleet
    for pack in sorted(set(_objects(objects, "packs")) - set(_tree_packs(a, objects))):
        data = bytearray(pack.read_bytes())
        data[len(data) // 2] ^= 0x01
        pack.write_bytes(bytes(data))
    assert _check(a)[0] == 0  # references intact: only reading the data can tell
    code, report = _check(a, "--read-data")
    assert code == 1
    assert all(p["object"].startswith("blob ") for p in report["problems"])
    assert any("failed authentication" in p["message"] for p in report["problems"])


@pytest.mark.parametrize("kind", ["trees", "snapshots", "index"])
def test_a_damaged_object_is_named(fleet: tuple[Home, Home, Path], kind: str,
                                   tmp_path: Path) -> None:
    a, _b, objects = fleet
    packed = _packed_trees(a, tmp_path / "scratch")
    name = ""
    if kind == "trees":  # format 2: the last tree of a tree pack
        victim = _tree_packs(a, objects)[0]
        name = max(packed[victim.relative_to(objects).as_posix()], key=lambda t: t[1])[0]
    elif kind == "index":  # one of a data pack (a tree pack's hides trees: tested apart)
        victim = objects / "index" / packed["index"][0][0]
    else:
        victim = _objects(objects, kind)[0]
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    code, report = _check(a)
    assert code == 1, report
    label = {"trees": "tree", "snapshots": "snapshot", "index": "index"}[kind]
    named = [p for p in report["problems"]
             if p["object"] == f"{label} {name or victim.name}"]
    if kind == "index":
        # an index nobody can read leaves its blobs unlisted: each is reported as well
        assert named and any("not listed by any index" in p["message"]
                             for p in report["problems"])
    else:
        assert named, report["problems"]
    assert all("failed authentication" in p["message"] for p in named)


def test_a_missing_tree_and_snapshot_are_named(fleet: tuple[Home, Home, Path]) -> None:
    a, _b, objects = fleet
    assert not _objects(objects, "trees")  # format 2: trees are in tree packs
    for tree_pack in _tree_packs(a, objects):
        tree_pack.unlink()
    code, report = _check(a)
    assert code == 1
    # each tree, and for each generation the folders it can no longer read
    assert {p["object"].split()[0] for p in report["problems"]} == {"tree", "snapshot"}
    assert all("missing" in p["message"] for p in report["problems"]
               if p["object"].startswith("tree"))
    assert all(" cannot be read (tree " in p["message"] for p in report["problems"]
               if p["object"].startswith("snapshot"))


def test_rolled_back_head_is_below_the_floor(fleet: tuple[Home, Home, Path]) -> None:
    a, _b, objects = fleet
    head = objects.parent / "refs" / "HEAD"
    old = head.read_bytes()
    a.write("SOUL.md", "soul v3\n")
    assert a.roam("push").code == 0
    head.write_bytes(old)  # the store served an older, authentic HEAD
    code, report = _check(a)
    assert code == 1
    assert [p["object"] for p in report["problems"]] == ["HEAD"]
    assert "below generation 3" in report["problems"][0]["message"]


def test_wrong_key_and_empty_store(fleet: tuple[Home, Home, Path], tmp_path: Path) -> None:
    a, _b, _objects = fleet
    a.store.key = new_key()
    code, report = _check(a)
    assert code == 1 and report["problems"][0]["object"] == "HEAD"
    empty = tmp_path / "empty"
    empty.mkdir()
    store = Store("local", {"backend": "local", "local_dir": str(empty)}, key=new_key())
    lonely = Home(tmp_path / "c", "c", store, a.runner)
    result = lonely.roam("check")
    assert result.code == 1 and "no HEAD" in result.err


def test_unreferenced_pack_from_a_crash_is_not_a_problem(fleet: tuple[Home, Home, Path]) -> None:
    a, _b, objects = fleet
    stray = objects / pack_key("ab" * 32)
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"left by a push that died before its snapshot")
    code, report = _check(a, "--read-data")
    assert code == 0, report
    assert report["unreferenced_packs"] == 1
