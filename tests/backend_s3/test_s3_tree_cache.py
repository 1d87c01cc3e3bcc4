"""Issue 22: a device's copies of the trees it read from a remote store are one file.

A pull from S3 (moto behind bench/netproxy.py) keeps a verified copy of each tree it read
so that the next pull, status or repair need not read it again. A file per tree was 3,026
file creations on the large home's pull (about a sixth of its main thread); the copies are
rows of one SQLite database now (`roam/cache/objects.db`). A damaged, swapped, locked or
misplaced cache only costs reading the trees from the store again, and a repair still
puts back a lost tree from it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from campaign.harness import Home
from campaign.hostile import keys, lose
from campaign.storeview import open_repository
from test_s3_requests import (  # noqa: F401
    LatencyProxy,
    Request,
    fleet,
    proxy,
)

from roam_core.store.objects import canonical

pytest_plugins = ("support.s3_servers",)


def _cache_files(home: Home) -> list[Path]:
    return sorted(path for path in (home.root / "roam" / "cache").rglob("*") if path.is_file())


def _tree_packs(home: Home, scratch: Path) -> set[str]:
    with open_repository(home.store, scratch) as repo:
        return {str(ref[1]) for copies in repo.tree_places().values() for ref in copies}


def _reads_of(requests: list[Request], packs: set[str]) -> int:
    """GETs of any of `packs` (keys `packs/<2 hex>/<id>`)."""
    return sum(1 for r in requests if r.method == "GET" and "/packs/" in r.target
               and "packs/" + r.target.partition("?")[0].split("/packs/", 1)[1] in packs)


def _pulled(laptop: Home, desk: Home) -> None:
    pulled = laptop.roam("pull", "--apply")
    assert pulled.code == 0, pulled.out + pulled.err
    shared = ("skills/", "memories/")
    assert ({rel: data for rel, data in laptop.files().items() if rel.startswith(shared)}
            == {rel: data for rel, data in desk.files().items() if rel.startswith(shared)})


def _joined(homes: tuple[Home, Home]) -> tuple[Home, Home]:
    """The desk pushes its home; the laptop joins and pulls it (keeping copies)."""
    desk, laptop = homes
    assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0
    _pulled(laptop, desk)
    return desk, laptop


def test_a_pull_keeps_its_trees_in_one_file_and_the_next_pull_reads_them_there(
        fleet: tuple[Home, Home], proxy: LatencyProxy, tmp_path: Path) -> None:  # noqa: F811
    desk, laptop = _joined(fleet)
    files = _cache_files(laptop)
    # a copy per tree was a file named by the tree's id: 80 folders, 80 files
    assert not [path for path in files if len(path.name) == 64], files
    assert len(files) <= 8, files
    with sqlite3.connect(laptop.root / "roam" / "cache" / "objects.db") as conn:
        assert conn.execute("SELECT count(*) FROM objects WHERE kind = 'trees'").fetchone()[0] > 70

    before = _tree_packs(desk, tmp_path / "before")
    desk.write("skills/group1/skill5/SKILL.md", "# changed\n")
    assert desk.roam("push").code == 0
    proxy.reset()
    _pulled(laptop, desk)
    # the unchanged folders' trees come from the copies: no tree pack read before is read
    assert _reads_of(proxy.requests(), before) == 0


def _damage(cache: Path, how: str) -> None:
    if how == "truncated":
        data = cache.read_bytes()
        cache.write_bytes(data[:len(data) // 3])
    elif how == "not a database":
        cache.write_bytes(b"roam was here\n" * 500)
    elif how == "a folder in its place":
        cache.unlink()
        cache.mkdir()
        (cache / "x").write_text("x")
    elif how == "rows swapped":
        # every copy still a well-formed tree, each under another tree's name: only the
        # name check can tell
        with sqlite3.connect(cache) as conn:
            rows = conn.execute("SELECT id, plain FROM objects WHERE kind = 'trees' "
                                "ORDER BY id").fetchall()
            assert len(rows) > 2
            turned = [(rows[(at + 1) % len(rows)][1], rows[at][0]) for at in range(len(rows))]
            conn.executemany("UPDATE objects SET plain = ? WHERE kind = 'trees' AND id = ?",
                             turned)
    elif how == "entries changed":
        with sqlite3.connect(cache) as conn:
            rows = conn.execute("SELECT id, plain FROM objects WHERE kind = 'trees'").fetchall()
            conn.executemany("UPDATE objects SET plain = ? WHERE kind = 'trees' AND id = ?",
                             [(canonical({"v": 1, "entries": {}}), tree_id)
                              for tree_id, _plain in rows])
    elif how == "rows of another type":
        # the column takes any type: text and numbers where the copies were
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE objects SET plain = CASE WHEN rowid % 2 THEN 'a tree' ELSE 7 "
                         "END WHERE kind = 'trees'")
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "not a database", "a folder in its place",
                                 "rows swapped", "entries changed", "rows of another type",
                                 "locked"])
def test_a_damaged_or_locked_cache_costs_a_read_from_the_store(
        fleet: tuple[Home, Home], proxy: LatencyProxy,  # noqa: F811
        tmp_path: Path, how: str) -> None:
    desk, laptop = _joined(fleet)
    before = _tree_packs(desk, tmp_path / "before")
    desk.write("skills/group1/skill5/SKILL.md", "# changed\n")
    desk.write("skills/group2/skill6/references/notes.md", "changed\n")
    assert desk.roam("push").code == 0

    cache = laptop.root / "roam" / "cache" / "objects.db"
    holder = None
    if how == "locked":
        holder = sqlite3.connect(cache, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    else:
        _damage(cache, how)
    proxy.reset()
    try:
        _pulled(laptop, desk)
    finally:
        if holder is not None:
            holder.execute("ROLLBACK")
            holder.close()
    assert _reads_of(proxy.requests(), before) > 0, "the trees were read from the store"
    status = laptop.roam("status")
    assert status.code == 0, status.out + status.err


def test_copies_an_earlier_roam_kept_a_file_each_are_taken_in_once(
        fleet: tuple[Home, Home], proxy: LatencyProxy, tmp_path: Path) -> None:  # noqa: F811
    desk, laptop = _joined(fleet)
    cache = laptop.root / "roam" / "cache"
    with sqlite3.connect(cache / "objects.db") as conn:
        rows = conn.execute("SELECT kind, id, plain FROM objects").fetchall()
    (cache / "objects.db").unlink()
    for kind, object_id, plain in rows:  # the layout of an earlier roam: a file per copy
        (cache / kind).mkdir(exist_ok=True)
        (cache / kind / object_id).write_bytes(plain)
    forged = cache / "trees" / ("ab" * 32)  # a file whose bytes are not its name's
    forged.write_bytes(canonical({"v": 1, "entries": {}}))
    (cache / "forgets").mkdir()  # decrypted forget records: taken in (or dropped) as well
    (cache / "forgets" / ("cd" * 32)).write_bytes(canonical({"v": 1, "forgotten": []}))
    before = _tree_packs(desk, tmp_path / "before")
    desk.write("skills/group1/skill5/SKILL.md", "# changed\n")
    assert desk.roam("push").code == 0

    proxy.reset()
    _pulled(laptop, desk)
    assert _reads_of(proxy.requests(), before) == 0, "the earlier copies were used"
    left = [path for path in _cache_files(laptop) if len(path.name) == 64]
    assert left == [], left
    with sqlite3.connect(cache / "objects.db") as conn:
        assert not conn.execute("SELECT 1 FROM objects WHERE id = ?", (forged.name,)).fetchall()


@pytest.mark.parametrize("store_format", [1])
def test_a_repair_puts_back_lost_trees_from_the_cache(
        fleet: tuple[Home, Home], proxy: LatencyProxy,  # noqa: F811
        tmp_path: Path, store_format: int) -> None:
    desk, laptop = _joined(fleet)
    desk.write("skills/group1/skill5/SKILL.md", "# changed\n")
    assert desk.roam("push").code == 0
    # a pull without --apply reads the new generation's trees (and keeps copies) while the
    # laptop's own record stays at the generation before: only the copies hold the new ones
    looked = laptop.roam("pull")
    assert looked.code == 0, looked.out + looked.err
    for key in keys(desk.store, "trees/"):
        lose(desk.store, key)
    repaired = laptop.roam("check", "--repair")
    assert "repaired" in repaired.out, repaired.out + repaired.err

    third = Home(tmp_path / "third", "third", desk.store, desk.runner)
    assert third.roam("init").code == 0
    _pulled(third, desk)
