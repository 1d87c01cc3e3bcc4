"""`roam/cache/objects.db` (store/object_cache.py): bounded, and any failure only a miss."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from roam_core.store import object_cache
from roam_core.store.object_cache import ObjectCache


def _rows(count: int, start: int = 0) -> list[tuple[str, str, bytes]]:
    return [("trees", f"{number:064x}", b'{"v":1,"entries":{}}')
            for number in range(start, start + count)]


def test_rows_are_read_in_one_batch_by_kind(tmp_path: Path) -> None:
    cache = ObjectCache(tmp_path)
    assert cache.get_many("trees", ["0" * 64]) == {}
    assert not (tmp_path / "objects.db").exists(), "a read creates nothing"
    assert cache.put_many([*_rows(2000), ("snapshots", "f" * 64, b"{}")])
    ids = [row[1] for row in _rows(2000)]
    assert len(ObjectCache(tmp_path).get_many("trees", ids)) == 2000
    assert ObjectCache(tmp_path).get_many("snapshots", ids) == {}
    assert [path.name for path in tmp_path.iterdir()] == ["objects.db"]


def test_the_trees_of_older_generations_are_dropped_once_they_are_many(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_cache, "COMPACT_FLOOR", 10)
    cache = ObjectCache(tmp_path)
    current = {row[1] for row in _rows(5)}
    cache.put_many([*_rows(20, start=100), ("snapshots", "f" * 64, b"{}")])
    cache.keep_only("trees", current)  # 20 rows: not over 4 × 5 yet
    assert len(cache.get_many("trees", [row[1] for row in _rows(20, start=100)])) == 20
    cache.put_many(_rows(5))
    cache.keep_only("trees", current)  # 25 rows: only the current generation's stay
    conn = sqlite3.connect(tmp_path / "objects.db")
    assert {row[0] for row in conn.execute("SELECT id FROM objects WHERE kind = 'trees'")} \
        == current
    assert conn.execute("SELECT count(*) FROM objects WHERE kind = 'snapshots'").fetchone() \
        == (1,)


def test_a_file_that_is_no_database_is_a_miss_then_built_afresh(tmp_path: Path) -> None:
    (tmp_path / "objects.db").write_bytes(b"not sqlite\n" * 100)
    cache = ObjectCache(tmp_path)
    assert cache.get_many("trees", ["0" * 64]) == {}
    assert not cache.put_many(_rows(1)), "off for the rest of the process"
    assert not (tmp_path / "objects.db").exists()
    again = ObjectCache(tmp_path)  # the next command
    assert again.put_many(_rows(1))
    assert len(again.get_many("trees", [_rows(1)[0][1]])) == 1


def test_a_lock_held_too_long_is_waited_for_once(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_cache, "BUSY_SECONDS", 0.05)
    ObjectCache(tmp_path).put_many(_rows(1))
    holder = sqlite3.connect(tmp_path / "objects.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    opened: list[Path] = []
    real = sqlite3.connect

    def connect(path: Path, *args: object, **kwargs: object) -> sqlite3.Connection:
        opened.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(object_cache.sqlite3, "connect", connect)
    try:
        cache = ObjectCache(tmp_path)
        assert cache.get_many("trees", [_rows(1)[0][1]]) == {}
        assert not cache.put_many(_rows(2))
        assert cache.get_many("trees", [_rows(1)[0][1]]) == {}
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(opened) == 1, "after the first failure the cache is left alone"
    assert (tmp_path / "objects.db").exists(), "a locked database is not removed"
    assert len(ObjectCache(tmp_path).get_many("trees", [_rows(1)[0][1]])) == 1
