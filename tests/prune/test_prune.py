"""Issue 23: `roam prune` deletes what no kept generation needs, and nothing else.

On the local backend and S3 (moto server): after a forget, prune's plan deletes nothing;
`--apply` marks, and deletes what was marked a grace period before. Every kept generation
reads back byte for byte and `roam check --read-data` stays clean. A push made after a mark,
whose content only a marked pack holds, uploads it again instead of relying on the pack.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, stores
from campaign.storeview import open_repository
from helpers import every_version, session_of, store_keys

from roam_core.engine.prune import prune
from roam_core.testing.memory import MemoryBackend
from roam_core.types import Capabilities

pytest_plugins = ("support.s3_servers",)


def _versions(rng: random.Random) -> list[bytes]:
    return [rng.randbytes(60_000) for _ in range(6)]


def _push_all(home: Home, versions: list[bytes], store_format: int = 2) -> None:
    assert home.roam("init", "--create-remote", "--format", str(store_format)).code == 0
    home.write("memories/steady.md", b"steady\n" * 1000)
    for data in versions:
        home.write("memories/big.bin", data)
        result = home.roam("push")
        assert result.code == 0, result.err


def _prune(home: Home, *args: str) -> dict[str, object]:
    result = home.roam("prune", "--json", *args)
    assert result.code == 0, result.err
    return result.json()  # type: ignore[no-any-return]


def _tree_packs(home: Home, scratch: Path) -> set[str]:
    """Format 2: the packs that hold trees."""
    with open_repository(home.store, scratch) as repo:
        return {ref[1] for copies in repo.tree_places().values() for ref in copies}


@pytest.mark.parametrize(("kind", "store_format"), [("local", 1), ("s3", 1), ("local", 2),
                                                    ("s3", 2)])
def test_prune_deletes_only_what_forgotten_generations_needed(
        kind: str, store_format: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    rng = random.Random(5)
    versions = _versions(rng)
    with stores(kind, tmp_path, request) as store:
        # whole packs only: repacking (test_repack.py) would take generation 1's pack too
        desk = Home(tmp_path / "desk", "desk", store, Runner(), prune_repack_threshold=100)
        _push_all(desk, versions, store_format)  # generations 1..6
        before = every_version(desk)
        assert desk.roam("forget", "--keep-last", "2", "--apply").code == 0
        packs_before = store_keys(desk, "packs/")
        trees_before = _tree_packs(desk, tmp_path / "scratch")
        assert bool(trees_before) == (store_format == 2)

        plan = _prune(desk)
        assert plan["applied"] is False and plan["kept_generations"] == 2
        # generation 1's pack also holds steady.md (still needed): 2, 3 and 4's packs go;
        # in format 2 also the tree packs only forgotten generations' trees were in
        dead_trees = len(trees_before - _reached_tree_packs(desk, tmp_path / "scratch2"))
        assert plan["garbage"]["packs"] == 3 + dead_trees
        assert plan["garbage"]["snapshots"] == 5
        assert plan["garbage_bytes"] >= 3 * 60_000 and plan["deleted"] == {}
        assert store_keys(desk, "packs/") == packs_before

        marked = _prune(desk, "--apply")  # the default grace: marks only
        assert marked["marked"] > 0 and marked["deleted"] == {}
        assert marked["waiting"] == marked["marked"]
        assert store_keys(desk, "packs/") == packs_before

        swept = _prune(desk, "--apply", "--grace-minutes", "0")
        assert swept["deleted"]["packs"] == plan["garbage"]["packs"]
        assert swept["deleted"]["snapshots"] == 5
        assert swept["deleted_bytes"] == plan["garbage_bytes"]
        assert len(store_keys(desk, "packs/")) == len(packs_before) - swept["deleted"]["packs"]
        assert store_keys(desk, "marks/") == set()
        after = every_version(desk)
        assert after == {number: before[number] for number in (5, 6)}
        check = desk.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err
        again = _prune(desk, "--apply", "--grace-minutes", "0")
        assert again["garbage"] == {} and again["deleted"] == {}


def _reached_tree_packs(home: Home, scratch: Path) -> set[str]:
    """The tree packs holding a tree of a kept generation (what prune must keep)."""
    from roam_core.engine.prune import reach

    with session_of(home) as session:
        needed = reach(session)
    return needed.packs & _tree_packs(home, scratch)


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "T"


def _push_past_a_sweep(laptop: Home, desk: Home) -> None:
    """Push from `laptop`, stopped (SIGSTOP) after its snapshot is stored and before it swaps
    HEAD, while `desk` prunes three hours later (the grace period is two): what the old marks
    name goes, while the laptop's new, unpublished objects are only marked."""
    pusher = subprocess.Popen(laptop.argv("push"), env=laptop.env({
        "ROAM_TEST_KILL_AT": "push:snapshot", "ROAM_TEST_KILL_SIGNAL": "SIGSTOP"}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _stopped(pusher.pid):
            assert pusher.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with session_of(desk) as session:
            swept = prune(session, apply=True, clock=lambda: time.time() + 3 * 3600)
        assert sum(swept.deleted.values()) > 0 and swept.marked > 0
    finally:
        os.kill(pusher.pid, signal.SIGCONT)
    _out, err = pusher.communicate(timeout=60)
    assert pusher.returncode == 0, err


def test_a_push_in_flight_after_a_mark_never_relies_on_a_marked_pack(tmp_path: Path) -> None:
    rng = random.Random(6)
    versions = _versions(rng)
    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        _push_all(desk, versions)
        assert laptop.roam("init").code == 0 and laptop.roam("pull", "--apply").code == 0
        assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
        assert _prune(desk, "--apply")["marked"] > 0  # generation 2's pack is marked now
        # the laptop brings back generation 2's content, which only a marked pack holds
        laptop.write("memories/big.bin", versions[1])
        _push_past_a_sweep(laptop, desk)
        found = every_version(laptop)
        assert max(found) == 7 and found[7]["memories/big.bin"] == versions[1]
        check = laptop.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err


def test_a_push_in_flight_never_relies_on_a_marked_tree(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        # format 1: a tree is an object of its own, marked and swept by name
        assert desk.roam("init", "--create-remote", "--format", "1").code == 0
        desk.write("memories/a.md", "a\n")
        desk.write("memories/b.md", "b\n")
        desk.write("skills/keep/SKILL.md", "b\n")  # keeps b's blob and pack needed
        assert desk.roam("push").code == 0  # 1
        (desk.root / "memories/b.md").unlink()
        assert desk.roam("push").code == 0  # 2
        assert laptop.roam("init").code == 0 and laptop.roam("pull", "--apply").code == 0
        assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
        marked = _prune(desk, "--apply")
        assert marked["garbage"].get("trees", 0) > 0 and "packs" not in marked["garbage"]
        # generation 1's memories/ comes back: the same entries, so the same tree (marked)
        laptop.write("memories/b.md", "b\n")
        _push_past_a_sweep(laptop, desk)
        found = every_version(laptop)
        assert found[3]["memories/b.md"] == b"b\n"
        check = laptop.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err


def test_prune_refuses_a_backend_that_cannot_delete(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with stores("memory", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner())
        assert desk.roam("init", "--create-remote").code == 0
        monkeypatch.setattr(MemoryBackend, "capabilities", Capabilities(deletes=False))
        result = desk.roam("prune", "--apply")
        assert result.code == 1
        assert result.err.strip() == ("roam: the memory backend cannot delete objects, so this "
                                      "store cannot be pruned (it keeps every generation)")


def test_a_long_push_whose_objects_a_prune_swept_meanwhile_publishes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_core.engine import lease, push

    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        # format 1: the push relies on trees by name (format 2: on tree packs)
        assert desk.roam("init", "--create-remote", "--format", "1").code == 0
        desk.write("memories/MEMORY.md", "one\n")
        assert desk.roam("push").code == 0
        assert laptop.roam("init").code == 0 and laptop.roam("pull", "--apply").code == 0
        laptop.write("memories/long.md", "written early in a push that runs for hours\n")
        original = push.kill_point

        def prune_meanwhile(name: str) -> None:
            original(name)
            if name == "push:snapshot":  # the push's objects are stored, HEAD not swapped
                with session_of(desk) as session:
                    prune(session, apply=True)  # marks them (unreferenced yet)
                    swept = prune(session, apply=True, clock=lambda: time.time() + 3 * 3600)
                assert swept.deleted.get("packs", 0) > 0

        monkeypatch.setattr(push, "kill_point", prune_meanwhile)
        monkeypatch.setattr(lease, "RECHECK_AFTER", -1.0)  # as if it had run for hours
        result = laptop.roam("push")
        assert result.code == 1
        assert "a prune marked or deleted" in result.err and "run roam push again" in result.err
        monkeypatch.setattr(push, "kill_point", original)
        assert laptop.roam("push").code == 0  # again: everything it needs is stored anew
        found = every_version(laptop)
        assert found[max(found)]["memories/long.md"].startswith(b"written early")
        check = laptop.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err


def test_a_bad_grace_setting_is_a_one_line_error(tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:
    with stores("local", tmp_path, request) as store:
        home = Home(tmp_path / "home", "dev", store, Runner(), prune_grace_minutes="soon")
        assert home.roam("init", "--create-remote").code == 0
        result = home.roam("prune", "--apply")
        assert result.code != 0
        assert "Traceback" not in result.err
        assert "prune_grace_minutes must be a number" in result.err, result.err
