"""Issue 23: `roam prune` repacks packs that are mostly garbage.

A pack whose unused share reaches `prune_repack_threshold` has its live blobs (format 2: its
live trees too) copied into new packs; the old pack is then marked and swept like a dead
one. Every kept generation reads back byte for byte, a device that never saw the old packs
pulls them whole, `roam check --read-data` stays clean, and `--max-repack-size` caps the
bytes rewritten per run. A long push whose base names a repacked pack still publishes:
each blob it relies on is safe where the indexes place it now.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, stores
from helpers import every_version, session_of, store_keys

from roam_core.engine.prune import prune

pytest_plugins = ("support.s3_servers",)


def _prune(home: Home, *args: str) -> dict[str, object]:
    result = home.roam("prune", "--json", *args)
    assert result.code == 0, result.err
    return result.json()  # type: ignore[no-any-return]


def _mixed_store(home: Home, rng: random.Random, store_format: int) -> dict[str, bytes]:
    """Generation 1 packs two small keepers beside a large file that later changes."""
    assert home.roam("init", "--create-remote", "--format", str(store_format)).code == 0
    steady = {"memories/steady.md": rng.randbytes(3_000), "skills/a/SKILL.md":
              rng.randbytes(2_000)}
    for rel, data in steady.items():
        home.write(rel, data)
    for _ in range(3):
        home.write("memories/big.bin", rng.randbytes(80_000))
        home.write(f"skills/s{rng.randrange(99)}/SKILL.md", rng.randbytes(500))
        assert home.roam("push").code == 0
    return steady


def _pack_holding(home: Home, rel: str) -> str:
    with session_of(home) as session:
        from roam_core.engine.history import generations

        head = next(iter(generations(session)))
        entry = session.repo.load_manifest(head.snapshot.root)[rel]
        return entry.blobs[0][1]


@contextlib.contextmanager
def _desk_and_laptop(tmp_path: Path, seed: int
                     ) -> Iterator[tuple[Home, Home, dict[str, bytes], str]]:
    """A desk's mixed store (format 2, local) that the laptop pulled; then the desk forgot
    all but the last generation. Yields both, the steady files, and the pack that held
    `memories/steady.md` (mostly garbage now: the next prune repacks it)."""
    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        steady = _mixed_store(desk, random.Random(seed), 2)
        assert laptop.roam("init").code == 0 and laptop.roam("pull", "--apply").code == 0
        old_pack = _pack_holding(desk, "memories/steady.md")
        assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
        yield desk, laptop, steady, old_pack


@pytest.mark.parametrize(("kind", "store_format"), [("local", 1), ("local", 2), ("s3", 2)])
def test_prune_repacks_a_mostly_garbage_pack(kind: str, store_format: int, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    rng = random.Random(31)
    with stores(kind, tmp_path, request) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        steady = _mixed_store(desk, rng, store_format)
        old_pack = _pack_holding(desk, "memories/steady.md")
        assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
        kept = every_version(desk)

        plan = _prune(desk)
        assert plan["repacked"] >= 1 and plan["repack_written_bytes"] == 0
        assert old_pack in store_keys(desk, "packs/")

        done = _prune(desk, "--apply", "--grace-minutes", "0")
        assert done["repacked"] >= 1 and 0 < done["repack_written_bytes"] < done[
            "repacked_bytes"]
        packs = store_keys(desk, "packs/")
        assert old_pack not in packs  # its live blobs live in a new pack now
        assert every_version(desk) == kept
        check = desk.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err
        again = _prune(desk, "--apply", "--grace-minutes", "0")
        assert again["garbage"] == {} and again["repacked"] == 0

        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        assert laptop.roam("init").code == 0
        pulled = laptop.roam("pull", "--apply")
        assert pulled.code == 0, pulled.err
        for rel, data in steady.items():
            assert (laptop.root / rel).read_bytes() == data


def test_the_threshold_and_the_cap_bound_what_is_repacked(tmp_path: Path) -> None:
    rng = random.Random(32)
    with stores("local", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner(), prune_repack_threshold=100)
        _mixed_store(desk, rng, 1)
        assert desk.roam("forget", "--keep-last", "1", "--apply").code == 0
        assert _prune(desk)["repacked"] == 0  # 100: nothing is ever repacked

        desk.settings["prune_repack_threshold"] = 10
        (desk.root / "config.yaml").write_text(
            (desk.root / "config.yaml").read_text().replace(
                "prune_repack_threshold: 100", "prune_repack_threshold: 10"))
        plan = _prune(desk)
        assert plan["repacked"] >= 1
        capped = _prune(desk, "--apply", "--grace-minutes", "0", "--max-repack-size", "1k")
        assert capped["repacked"] == 0 and capped["repack_left"] == plan["repacked"]
        assert capped["repack_written_bytes"] == 0
        whole = _prune(desk, "--apply", "--grace-minutes", "0",
                       "--max-repack-size", str(plan["repacked_bytes"]))
        assert whole["repacked"] == plan["repacked"] and whole["repack_left"] == 0

        bad = desk.roam("prune", "--max-repack-size", "lots")
        assert bad.code == 64 and "not a size: 'lots'" in bad.err
        assert "Traceback" not in bad.err


def test_a_long_push_over_a_repacked_base_still_publishes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The laptop's base names the pack the desk repacked away: its push relies on the
    blobs' new pack (the indexes say so), so its check before the HEAD swap passes."""
    from roam_core.engine import lease

    with _desk_and_laptop(tmp_path, 33) as (desk, laptop, steady, old_pack):
        assert _prune(desk, "--apply", "--grace-minutes", "0")["repacked"] >= 1
        assert old_pack not in store_keys(desk, "packs/")

        monkeypatch.setattr(lease, "RECHECK_AFTER", -1.0)  # as if it had run for hours
        laptop.write("memories/new.md", "written after the repack\n")
        result = laptop.roam("push")
        assert result.code == 0, result.err
        found = every_version(laptop)
        assert found[max(found)]["memories/steady.md"] == steady["memories/steady.md"]
        check = laptop.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err


def test_a_repack_marked_while_a_push_reuses_its_blobs_loses_nothing(tmp_path: Path) -> None:
    """A push that starts after the repack's mark relies on the new pack, not the marked
    one: the sweep three hours later deletes the old pack and the push's generation reads
    back whole."""
    with _desk_and_laptop(tmp_path, 34) as (desk, laptop, steady, old_pack):
        marked = _prune(desk, "--apply")  # the default grace: repacks and marks only
        assert marked["repacked"] >= 1 and marked["deleted"] == {}
        # the laptop pushes the steady content under a new name: deduplicated, it must
        # name the new pack
        laptop.write("memories/copy.md", steady["memories/steady.md"])
        assert laptop.roam("push").code == 0
        with session_of(desk) as session:
            swept = prune(session, apply=True, clock=lambda: time.time() + 3 * 3600)
        assert swept.deleted.get("packs", 0) > 0
        assert old_pack not in store_keys(desk, "packs/")
        assert _pack_holding(laptop, "memories/copy.md") in store_keys(desk, "packs/")
        found = every_version(laptop)
        assert found[max(found)]["memories/copy.md"] == steady["memories/steady.md"]
        check = laptop.roam("check", "--read-data")
        assert check.code == 0, check.out + check.err
