"""A reader that read the indexes before a prune repacked still reads every kept tree.

Format 2 trees are found through the indexes (`tree_places`), read once per repository. A
prune that repacks a tree pack copies its live trees into a new pack and deletes the old one
(at once with `--grace-minutes 0`). A repository that read the places before that (the
campaign's auditor, any long-lived reader) looked for the tree only where its old places
said, and failed "the pack is missing from the store" although the tree was stored (the
pruning campaign's final checks, on a local store, after a prune with `--grace-minutes 0`).
"""

from __future__ import annotations

import random
from pathlib import Path

from campaign.harness import Home, Runner, stores
from campaign.storeview import generations, manifest_of, open_repository
from helpers import store_keys


def test_a_reader_opened_before_a_repack_reads_the_kept_trees(tmp_path: Path) -> None:
    rng = random.Random(7)
    with stores("local", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner())
        assert desk.roam("init", "--create-remote", "--format", "2").code == 0
        desk.write("memories/steady.md", rng.randbytes(2_000))
        for number in range(4):
            for folder in range(6):
                desk.write(f"skills/s{folder}/n{number}/SKILL.md", rng.randbytes(300))
            assert desk.roam("push").code == 0
        with open_repository(store, tmp_path / "reader") as reader:
            stored = generations(reader)
            for _snapshot_id, snapshot in stored.values():
                manifest_of(reader, snapshot)  # the places are read now
            tree_packs_before = store_keys(desk, "packs/")
            assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
            done = desk.roam("prune", "--apply", "--grace-minutes", "0", "--json")
            assert done.code == 0, done.err
            assert done.json()["repacked"] >= 1, done.json()
            assert tree_packs_before - store_keys(desk, "packs/")
            # the local backend keeps a few packs open (8): a deleted pack stays readable
            # through an open descriptor until it is evicted; here it is, as on a large store
            reader.backend.inner.close()  # type: ignore[attr-defined]
            check = desk.roam("check", "--read-data")
            assert check.code == 0, check.out + check.err  # the store lost nothing
            kept = generations(reader)
            assert len(kept) == 1
            for _snapshot_id, snapshot in kept.values():
                for entry in manifest_of(reader, snapshot).values():
                    reader.read_content(entry)  # checked against the entry's digest
