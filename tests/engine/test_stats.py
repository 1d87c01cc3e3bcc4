"""Issue 23: `roam stats` — the store's numbers checked against what was pushed.

A fleet of two devices pushes several generations on the local backend and on S3 (moto).
Pack bytes are checked against the pack objects' real sizes in the store, the per-generation
bytes against the blob references of the files that changed (read with `entry_at`, not the
stats walker), and a file's bytes become "older generations only" only once it changes again.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import pytest
from campaign.harness import Home, Runner, Store, stores

from roam_core.engine.history import generations
from support.sessions import session_of

pytest_plugins = ("support.s3_servers",)

KEYS = {"generations", "oldest", "newest", "per_device", "objects", "referenced_bytes",
        "current_bytes", "older_only_bytes", "unreferenced_bytes", "dedup_ratio", "growth"}
GROWTH_KEYS = {"generation", "device", "date", "files", "file_bytes", "added_bytes"}


def _text(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


def _blob_bytes(home: Home, generation: int, path: str) -> int:
    """The sealed bytes of `path`'s blobs in `generation`, from its tree entry."""
    with session_of(home) as session:
        for gen in generations(session):
            if gen.number == generation:
                entry = session.repo.entry_at(gen.snapshot.root, path)
                assert entry is not None
                return sum(ref[3] for ref in entry.blobs)
        raise AssertionError(f"no generation {generation}")


def _manifest_ratio(home: Home) -> float:
    """Dedup ratio from every generation's flattened manifest (an independent walk)."""
    with session_of(home) as session:
        counted = 0
        stored: dict[str, int] = {}
        for gen in generations(session):
            for entry in session.repo.load_manifest(gen.snapshot.root).values():
                for ref in entry.blobs:
                    counted += ref[3]
                    stored[ref[0]] = ref[3]
        return round(counted / sum(stored.values()), 3)


def _stored_packs(store: Store, request: pytest.FixtureRequest) -> list[int]:
    """The size of every pack object, as the storage itself reports it."""
    if store.kind == "local":
        return [path.stat().st_size for path in Path(store.settings["local_dir"]).rglob("*")
                if path.is_file() and "packs" in path.parts]
    server = request.getfixturevalue("moto_s3")
    pages = server.client().get_paginator("list_objects_v2").paginate(
        Bucket=store.settings["s3_bucket"], Prefix=f"{store.settings.get('s3_prefix', 'roam')}"
        "/objects/packs/")
    return [item["Size"] for page in pages for item in page.get("Contents", ())]


def _stats(home: Home, *args: str) -> dict[str, Any]:
    result = home.roam("stats", "--json", *args)
    assert result.code == 0, result.err
    return result.json()


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_stats_match_what_was_pushed(kind: str, tmp_path: Path,
                                     request: pytest.FixtureRequest) -> None:
    rng = random.Random(23)
    with stores(kind, tmp_path, request) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        desk.write("memories/MEMORY.md", "first\n")
        desk.write("memories/steady.md", _text(rng, 20_000))
        desk.write("memories/edited.md", _text(rng, 30_000))
        assert desk.roam("init", "--create-remote").code == 0  # generation 0
        assert desk.roam("push").code == 0  # 1: everything
        assert laptop.roam("init").code == 0
        assert laptop.roam("pull", "--apply").code == 0
        laptop.write("memories/MEMORY.md", "second\n")
        assert laptop.roam("push").code == 0  # 2: laptop, a small change
        assert desk.roam("pull", "--apply").code == 0
        desk.write("memories/edited.md", _text(rng, 30_000))
        assert desk.roam("push").code == 0  # 3: edited.md changes

        stats = _stats(desk)
        assert set(stats) == KEYS
        assert stats["generations"] == 4
        assert stats["oldest"]["generation"] == 0 and stats["newest"]["generation"] == 3
        assert stats["per_device"] == {"desk": 3, "laptop": 1}
        first = _blob_bytes(desk, 1, "memories/edited.md")
        third = _blob_bytes(desk, 3, "memories/edited.md")
        old_memory = _blob_bytes(desk, 1, "memories/MEMORY.md")
        # generation 1's edited.md and MEMORY.md are now needed only by older generations
        assert stats["older_only_bytes"] == first + old_memory
        current = sum(_blob_bytes(desk, 3, path) for path in
                      ("memories/MEMORY.md", "memories/steady.md", "memories/edited.md"))
        config = stats["current_bytes"] - current  # config.yaml is shared too
        assert 0 <= config < 2_000
        growth = {row["generation"]: row for row in stats["growth"]}
        assert set(growth[3]) == GROWTH_KEYS
        assert growth[3]["added_bytes"] == third and growth[3]["device"] == "desk"
        assert growth[2]["added_bytes"] == _blob_bytes(desk, 2, "memories/MEMORY.md")
        assert growth[1]["added_bytes"] >= first + _blob_bytes(desk, 1, "memories/steady.md")
        # pack bytes from the indexes' spans are the pack objects' real sizes
        packs = _stored_packs(store, request)
        assert stats["objects"]["packs"] == {"count": len(packs), "bytes": sum(packs),
                                             "unknown": 0}
        # format 2: the trees are packed too, their sizes known from their indexes
        trees = stats["objects"]["trees"]
        assert trees["unknown"] == 0 and trees["count"] >= 4
        assert stats["referenced_bytes"] + stats["unreferenced_bytes"] + trees["bytes"] \
            == sum(packs)
        assert stats["objects"]["snapshots"]["count"] == 4
        assert stats["dedup_ratio"] == _manifest_ratio(desk)

        desk.write("memories/edited.md", _text(rng, 30_000))
        assert desk.roam("push").code == 0  # 4: edited.md changes again
        again = _stats(desk, "--last", "2")
        # only now does generation 3's version leave the current generation
        assert again["older_only_bytes"] == first + old_memory + third
        assert [row["generation"] for row in again["growth"]] == [3, 4]
        assert again["growth"][1]["added_bytes"] == _blob_bytes(desk, 4, "memories/edited.md")
        # the laptop, which never saw generations 3 and 4, reads the same numbers
        assert _stats(laptop, "--last", "2") == again


def test_duplicated_file_raises_the_dedup_ratio(tmp_path: Path) -> None:
    rng = random.Random(7)
    with stores("local", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner())
        data = _text(rng, 40_000)
        desk.write("memories/one.md", data)
        assert desk.roam("init", "--create-remote").code == 0
        assert desk.roam("push").code == 0
        before = _stats(desk)
        desk.write("memories/two.md", data)  # the same bytes under a second name
        assert desk.roam("push").code == 0
        after = _stats(desk)
        assert after["referenced_bytes"] == before["referenced_bytes"] + \
            after["growth"][-1]["added_bytes"]
        assert after["growth"][-1]["added_bytes"] < 2_000  # only the new tree's worth: none
        assert after["dedup_ratio"] == _manifest_ratio(desk)
        one = _blob_bytes(desk, 2, "memories/one.md")
        assert _blob_bytes(desk, 2, "memories/two.md") == one
        # generation 2 holds the file twice and generation 1 once, all stored once
        assert after["dedup_ratio"] > before["dedup_ratio"] + 1.0


def test_stats_table_and_usage(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner())
        desk.write("memories/MEMORY.md", "first\n")
        assert desk.roam("init", "--create-remote").code == 0
        assert desk.roam("push").code == 0
        shown = desk.roam("stats")
        assert shown.code == 0, shown.err
        for words in ("generations: 2", "packs", "trees", "unknown", "current generation needs",
                      "only older generations", "dedup ratio", "Added to store"):
            assert words in shown.out
        for bad in (["--last", "-1"], ["--last", "many"], ["--lats", "3"]):
            wrong = desk.roam("stats", *bad)
            assert wrong.code == 64, (bad, wrong.err)
            assert "Traceback" not in wrong.err
        assert _stats(desk, "--last", "0")["growth"] == []
        assert desk.roam("--json", "stats").json()["generations"] == 2


def test_stats_in_a_fresh_home_creates_nothing(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        fresh = Home(tmp_path / "fresh", "fresh", store, Runner())
        before = sorted(p.relative_to(fresh.root) for p in fresh.root.rglob("*"))
        result = fresh.roam("stats")
        assert result.code != 0 and "roam init" in result.err
        assert "Traceback" not in result.err
        assert sorted(p.relative_to(fresh.root) for p in fresh.root.rglob("*")) == before
        assert not (fresh.root / "roam").exists()
        assert not any(Path(store.settings["local_dir"]).iterdir())
