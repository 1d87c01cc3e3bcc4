"""Issue 23: an index written after its pack was marked no longer outlives the pack.

A push stores a pack, then its index. A prune whose survey runs between the two finds the
pack unreferenced and unindexed and marks it alone; when the push then never publishes,
the sweep a grace period later deletes the pack, while the index (garbage only from then)
used to wait for a mark of its own and a sweep a whole grace period later. Meanwhile the
index named a pack the store no longer held: a push reusing one of its blobs found the pack
gone and recorded it as lost (a void record, which `roam check` then reports) before
uploading the blob again. Now the sweep deletes such an index with its pack.
"""

from __future__ import annotations

import time
from pathlib import Path

from campaign.harness import Home, Runner, stores
from helpers import every_version, session_of, store_keys

from roam_core.engine.prune import prune
from roam_core.store.objects import index_key
from roam_core.store.packer import Packer
from roam_core.store.uploads import put_once

ORPHAN = b"content a push stored and never published\n" * 50


def test_an_index_written_after_its_pack_was_marked_goes_with_the_pack(
        tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        assert desk.roam("init", "--create-remote").code == 0
        desk.write("memories/MEMORY.md", "kept\n")
        assert desk.roam("push").code == 0
        with session_of(desk) as session:
            # the push that never publishes: its pack is stored, its index not yet
            packer = Packer(session.repo, {})
            packer.add_chunk(ORPHAN)
            packer.finish()
            pack = next(iter(packer.locations.values()))[1]
            (index,) = [index_key(index_id) for index_id, (blobs, _trees)
                        in session.repo.index_entries().items()
                        if any(ref[1] == pack for ref in blobs)]
            sealed = session.backend.get(index)
            session.backend.delete([index])
            assert prune(session, apply=True).marked > 0  # the pack, alone
            put_once(session.backend, index, sealed)  # now the push writes the index
            swept = prune(session, apply=True, clock=lambda: time.time() + 3 * 3600)
            assert swept.deleted.get("packs", 0) == 1
        assert pack not in store_keys(desk, "packs/")
        assert index not in store_keys(desk, "index/")  # gone with its pack

        # a push reusing the orphan's blob uploads it again, with no lost pack to record
        desk.write("memories/again.md", ORPHAN)
        assert desk.roam("push").code == 0
        assert store_keys(desk, "voids/") == set()
        check = desk.roam("check", "--read-data")
        assert check.code == 0 and "void" not in check.out, check.out + check.err
        found = every_version(desk)
        assert found[max(found)]["memories/again.md"] == ORPHAN
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        assert laptop.roam("init").code == 0 and laptop.roam("pull", "--apply").code == 0
        assert (laptop.root / "memories/again.md").read_bytes() == ORPHAN
