"""Issue 19 (2): objects the provider lost are found, never relied on, and put back.

On local, S3 (moto) and git stores: a push never counts a lost pack's blobs as present, and
`roam check --repair` re-uploads what this device still holds, rewrites indexes and trees,
and names what it cannot repair (generation and path).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from campaign.harness import Home, Runner, Store, stores
from campaign.hostile import damage, keys, lose
from campaign.storeview import open_repository

from roam_core.engine import repair
from roam_core.store.catalog import KnownBlobs
from roam_core.store.manifest import BlobRef
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository

pytest_plugins = ("support.s3_servers",)

SKILL = "a skill worth keeping\n" * 400
#: In `_hurt_fleet`'s prefixes: the tree packs (format 2 keeps trees there, not in trees/),
#: and the packs of file data only.
TREE_PACKS = "tree packs"
DATA_PACKS = "data packs"
TREE_INDEXES = "tree indexes"
DATA_INDEXES = "data indexes"


@pytest.fixture(params=["local", "s3", "git"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with stores(request.param, tmp_path / "store", request) as found:
        yield found


def _homes(store: Store, tmp_path: Path) -> tuple[Home, Home]:
    runner = Runner()
    return (Home(tmp_path / "a", "a", store, runner), Home(tmp_path / "b", "b", store, runner))


def _shared(home: Home) -> dict[str, bytes]:
    return {rel: data for rel, data in home.files().items()
            if rel.startswith(("SOUL.md", "memories/", "skills/"))}


def _joins_and_matches(b: Home, a: Home) -> None:
    """`b` joins the fleet, pulls, and then holds exactly `a`'s shared files."""
    assert b.roam("init").code == 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert _shared(b) == _shared(a)


def _hurt_fleet(store: Store, tmp_path: Path, hurt: Callable[[Store, str], None],
                *prefixes: str) -> tuple[Home, Home]:
    """Homes a (two generations pushed) and b; then `hurt` every object under `prefixes`."""
    a, b = _homes(store, tmp_path)
    # a hurt under trees/ is format 1's: its trees are objects of their own
    _two_generations(a, 1 if "trees/" in prefixes else 2)
    for prefix in prefixes:
        found = keys(store, prefix)
        if prefix in (TREE_PACKS, DATA_PACKS, TREE_INDEXES, DATA_INDEXES):
            folder = "packs/" if prefix.endswith("packs") else "index/"
            trees = _tree_keys(store, tmp_path, folder)
            data = sorted(set(keys(store, folder)) - set(trees))
            found = trees if prefix.startswith("tree") else data
        assert found, f"nothing to hurt under {prefix}"
        for key in found:
            hurt(store, key)
    return a, b


def _tree_keys(store: Store, tmp_path: Path, folder: str) -> list[str]:
    """The tree packs (`folder` packs/) or their indexes (index/)."""
    with open_repository(store, tmp_path / "scratch") as repo:
        if folder == "packs/":
            return sorted({ref[1] for copies in repo.tree_places().values() for ref in copies})
        return sorted(f"index/{index_id}" for index_id in repo.indexes()
                      if not repo.indexes()[index_id])


def _two_generations(a: Home, store_format: int = 2) -> None:
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/one/SKILL.md", SKILL)
    assert a.roam("init", "--create-remote", "--format", str(store_format)).code == 0
    assert a.roam("push").code == 0
    a.write("SOUL.md", "soul v2\n")
    a.write("memories/MEMORY.md", "remember this\n")
    assert a.roam("push").code == 0


def test_a_push_never_relies_on_a_lost_pack(store: Store, tmp_path: Path) -> None:
    a, b = _homes(store, tmp_path)
    a.write("skills/one/SKILL.md", SKILL)
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    for key in keys(store, "packs/"):
        lose(store, key)
    a.write("skills/copy/SKILL.md", SKILL)  # the same bytes: its blob was in the lost pack
    pushed = a.roam("push", "--json")
    assert pushed.code == 0, pushed.err
    assert pushed.json()["uploaded_bytes"] > 0
    assert b.roam("init").code == 0
    pulled = b.roam("pull", "--apply", "--only", "skills/copy/")
    assert pulled.code == 0, pulled.err
    assert b.files()["skills/copy/SKILL.md"] == SKILL.encode()
    # the older entry naming the lost pack reads the blob from where the push put it
    pulled = b.roam("pull", "--apply", "--only", "skills/one/")
    assert pulled.code == 0, pulled.err
    assert b.files()["skills/one/SKILL.md"] == SKILL.encode()


def test_repair_puts_back_lost_packs_and_names_what_it_cannot(store: Store,
                                                             tmp_path: Path) -> None:
    a, b = _hurt_fleet(store, tmp_path, lose, DATA_PACKS)
    checked = a.roam("check")
    assert checked.code == 1 and "roam check --repair" in checked.out, checked.out
    repaired = a.roam("check", "--repair")
    # generation 1's SOUL.md ("soul v1") is on no device any more: named, not invented
    assert repaired.code == 1, repaired.out + repaired.err
    assert "cannot repair" in repaired.out
    assert "'SOUL.md'" in repaired.out and "generation 1" in repaired.out
    assert "skills/one" not in repaired.out.partition("cannot repair")[2]
    _joins_and_matches(b, a)
    again = a.roam("check", "--json")
    assert all("generation 1" in p["message"] for p in again.json()["problems"]), again.out


def test_repair_rewrites_lost_indexes_and_trees(store: Store, tmp_path: Path) -> None:
    a, b = _hurt_fleet(store, tmp_path, lose, TREE_PACKS, "index/")
    assert a.roam("check").code == 1
    repaired = a.roam("check", "--repair")
    assert "repaired" in repaired.out, repaired.out + repaired.err
    _joins_and_matches(b, a)
    # generation 1's own root tree was never on this device (a local or git store keeps no
    # copy): that is all that may remain
    problems = a.roam("check", "--json").json()["problems"]
    assert all(p["object"].startswith(("tree", "snapshot")) for p in problems), problems


def test_a_damaged_pack_is_repaired_with_read_data(store: Store, tmp_path: Path) -> None:
    a, b = _hurt_fleet(store, tmp_path, damage, DATA_PACKS)
    assert a.roam("check").code == 0  # references intact: only reading tells
    assert a.roam("check", "--read-data").code == 1
    a.roam("check", "--repair", "--read-data")
    _joins_and_matches(b, a)


def test_a_repair_seals_against_the_catalogues_view_not_a_copy(
        tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The blobs a repair seals again are compared with the known-blob view over the compact
    catalogue, the broken ones dropped from the view: no dict of every blob the store holds
    (48 bytes a blob held, not ~250 copied; issue 23's catalogue)."""
    given: list[object] = []

    class Spy(Packer):
        def __init__(self, repo: Repository, known: Mapping[str, BlobRef],
                     **options: Any) -> None:
            given.append(known)
            super().__init__(repo, known, **options)

    monkeypatch.setattr(repair, "Packer", Spy)
    with stores("local", tmp_path / "store", request) as store:
        a, b = _hurt_fleet(store, tmp_path, damage, DATA_PACKS)
        a.roam("check", "--repair", "--read-data")
        _joins_and_matches(b, a)
        assert a.roam("check", "--read-data").code in (0, 1)  # generation 1's SOUL.md: gone
    assert len(given) == 1
    known = given[0]
    assert isinstance(known, KnownBlobs), type(known)
    assert known.dropped and not known.added  # the broken blobs, and nothing copied


def test_damaged_indexes_are_voided_and_rewritten(store: Store, tmp_path: Path) -> None:
    a, b = _hurt_fleet(store, tmp_path, damage, DATA_INDEXES)
    checked = a.roam("check")
    assert checked.code == 1 and "roam check --repair" in checked.out, checked.out
    repaired = a.roam("check", "--repair")
    assert repaired.code == 0, repaired.out + repaired.err
    assert a.roam("check", "--read-data").code == 0
    a.write("skills/copy/SKILL.md", SKILL)  # dedups against the rewritten index
    pushed = a.roam("push", "--json")
    assert pushed.code == 0, pushed.err
    assert pushed.json()["uploaded_bytes"] < len(SKILL) // 4
    _joins_and_matches(b, a)


def test_a_damaged_tree_is_named_not_invented(store: Store, tmp_path: Path) -> None:
    a, _b = _hurt_fleet(store, tmp_path, damage, TREE_PACKS)
    repaired = a.roam("check", "--repair")
    assert repaired.code == 1 and "Traceback" not in repaired.err
    assert "cannot repair" in repaired.out and "tree " in repaired.out, repaired.out


def test_a_blob_stored_twice_is_read_from_the_copy_still_there(store: Store,
                                                               tmp_path: Path) -> None:
    """The hostile campaign's repair gap: the blob's other copy is there, but readers asked
    the indexes for one location only, and `check` passed the pack no one could read."""
    a, b = _homes(store, tmp_path)
    a.write("skills/one/SKILL.md", SKILL)
    # format 1: the only pack is the data pack (format 2 adds tree packs and their indexes)
    assert a.roam("init", "--create-remote", "--format", "1").code == 0
    assert a.roam("push").code == 0
    (first,) = keys(store, "packs/")
    with open_repository(store, tmp_path / "provider") as repo:
        # two more copies of every blob (as devices that each re-uploaded them make)
        (index,) = repo.indexes()
        held = repo.load_index(index)
        for _copy in range(2):
            packer = Packer(repo, {})
            for ref in held:
                packer.add_chunk(repo.read_blob(ref))
            packer.finish()
        _send(repo)
        copies = sorted(set(keys(store, "packs/")) - {first})
    with open_repository(store, tmp_path / "fresh") as repo:
        # the pack a fresh reader's last index names: readers used to go there alone
        last = list(repo.indexes().values())[-1][0][1]
    gone = last if last != first else copies[0]
    lose(store, first)  # the pack the entry names
    lose(store, gone)
    assert b.roam("init").code == 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.out + pulled.err
    assert b.files()["skills/one/SKILL.md"] == SKILL.encode()
    # every file reads, so `check` passes; the repair retires the pack an index still names
    assert a.roam("check", "--read-data").code == 0
    repaired = a.roam("check", "--repair", "--json")
    assert repaired.code == 0 and repaired.json()["voided_packs"] == 2, repaired.out
    assert a.roam("check", "--read-data").code == 0


def _send(repo: Repository) -> None:
    """Objects written behind roam's back reach a batched (git) store with a ref swap."""
    repo.backend.flush()
    if repo.backend.capabilities.batched_publish:
        head = repo.read_head()
        assert head is not None
        repo.write_head(head, head.version)


def test_a_damaged_tree_of_the_current_generation_is_published_again(store: Store,
                                                                     tmp_path: Path) -> None:
    """Trees are create-once: the repair publishes this device's generation again as a new
    one (fresh trees), and names the older generations the damage still affects."""
    a, b = _hurt_fleet(store, tmp_path, damage, "trees/")
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 1  # nothing to read from
    repaired = a.roam("check", "--repair")
    assert "published generation 2 again as generation 3" in repaired.out, repaired.out
    assert repaired.code == 1 and "Traceback" not in repaired.err
    lost = repaired.out.partition("cannot repair")[2]
    assert "generation 1: the files below '/' cannot be read" in lost, repaired.out
    assert "generation 2: the files below '/' cannot be read" in lost, repaired.out
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.out + pulled.err
    assert _shared(b) == _shared(a)
    report = a.roam("check", "--json").json()
    assert report["head_generation"] == 3
    # what is left is the older generations' damaged trees, each named
    problems = report["problems"]
    assert problems and all(p["object"].startswith(("tree", "snapshot")) for p in problems)
    assert not any("generation 3" in p["message"] for p in problems), problems


def test_a_damaged_snapshot_of_the_current_generation_is_published_again(
        store: Store, tmp_path: Path) -> None:
    a, b = _hurt_fleet(store, tmp_path, damage, "snapshots/")
    checked = a.roam("check")
    assert checked.code == 1 and "roam check --repair" in checked.out, checked.out
    repaired = a.roam("check", "--repair")
    assert "published generation 2 again as generation 3" in repaired.out, repaired.out
    assert "generation 2: " in repaired.out.partition("cannot repair")[2], repaired.out
    _joins_and_matches(b, a)
    assert a.roam("check", "--json").json()["head_generation"] == 3


def test_after_a_repair_no_device_uploads_the_repaired_blobs_again(store: Store,
                                                                   tmp_path: Path) -> None:
    """A device whose synced generation names a voided pack takes the repaired copy: each
    device used to upload the blob once more (the copies the repair gap was made of)."""
    a, b = _homes(store, tmp_path)
    skill = secrets.token_hex(4096)  # incompressible: an upload shows in the byte count
    a.write("skills/one/SKILL.md", skill)
    # format 1: every pack lost is a data pack (format 2 would lose generation 0's trees too)
    assert a.roam("init", "--create-remote", "--format", "1").code == 0
    assert a.roam("push").code == 0
    _joins_and_matches(b, a)
    for key in keys(store, "packs/"):
        lose(store, key)
    assert a.roam("check", "--repair").code == 0
    b.write("skills/copy/SKILL.md", skill)
    pushed = b.roam("push", "--json")
    assert pushed.code == 0, pushed.err
    assert pushed.json()["uploaded_bytes"] < 1024, pushed.json()
    assert a.roam("check", "--read-data").code == 0
def test_damaged_tree_indexes_rewrite_this_devices_trees_and_name_the_rest(
        store: Store, tmp_path: Path) -> None:
    # format 2: a tree is found through its tree pack's index; with the index damaged, the
    # trees of the generation this device holds are written again, older ones are named
    a, b = _hurt_fleet(store, tmp_path, damage, TREE_INDEXES)
    checked = a.roam("check")
    assert checked.code == 1 and "roam check --repair" in checked.out, checked.out
    repaired = a.roam("check", "--repair")
    assert "Traceback" not in repaired.err
    assert "repaired" in repaired.out, repaired.out + repaired.err
    _joins_and_matches(b, a)
    problems = a.roam("check", "--json").json()["problems"]
    assert all(p["object"].startswith(("tree", "snapshot")) for p in problems), problems
