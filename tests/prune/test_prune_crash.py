"""Issue 23: a prune killed (SIGKILL) at any of its steps loses nothing a kept generation needs.

For each kill point of `engine/prune.py` a fresh store with forgotten generations is pruned
with `--grace-minutes 0` by a real process killed there. Then `roam check --read-data` is
clean, every kept generation reads back byte for byte, and a second prune (the same device:
its own expired or still-held lease is no obstacle) finishes the job: nothing unreferenced is
left. Generation 1's pack is mostly garbage, so the run repacks it first: the kill points
inside the repack (a new pack stored without its index, an index stored, every copy done
before the mark) are covered too, in format 1 and format 2 (tree packs repacked as well),
and on S3 (moto: each test prunes a copy of one seeded bucket) as on a local folder.
"""

from __future__ import annotations

import random
import shutil
import signal
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key, stores
from helpers import every_version

from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)

POINTS = ("prune:lease", "prune:repack:pack", "prune:repack:index", "prune:repacked",
          "prune:marked", "prune:delete:index", "prune:delete:packs", "prune:delete:trees",
          "prune:delete:snapshots", "prune:swept")
#: The steps a format-2 store runs differently (no tree objects: tree packs instead).
POINTS_2 = ("prune:repack:pack", "prune:repack:index", "prune:repacked", "prune:delete:index",
            "prune:delete:packs")


def _seed(base: Path, store_format: int) -> tuple[Path, Home]:
    """A home and its local store: six generations, the first four forgotten."""
    with stores("local", base) as store:
        return base, _seeded_home(base, store, store_format)


def _seeded_home(base: Path, store: Store, store_format: int) -> Home:
    rng = random.Random(9)
    home = Home(base / "desk", "desk", store, Runner())
    assert home.roam("init", "--create-remote", "--format", str(store_format)).code == 0
    home.write("memories/steady.md", "steady\n")
    for _ in range(5):
        home.write("memories/big.bin", rng.randbytes(30_000))
        home.write("skills/s/SKILL.md", rng.randbytes(3_000).hex())
        assert home.roam("push").code == 0
    assert home.roam("forget", "--keep-last", "2", "--apply").code == 0
    return home


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Home]:
    # format 1: trees are objects of their own, so every deletion step (trees/ too) runs
    return _seed(tmp_path_factory.mktemp("seed"), 1)


@pytest.fixture(scope="module")
def seeded_2(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Home]:
    return _seed(tmp_path_factory.mktemp("seed2"), 2)


@pytest.mark.parametrize("point", POINTS)
def test_a_prune_killed_at_each_step(point: str, seeded: tuple[Path, Home],
                                     tmp_path: Path) -> None:
    _killed_then_finished(point, seeded, tmp_path)


@pytest.mark.parametrize("point", POINTS_2)
def test_a_format_2_prune_killed_at_each_step(point: str, seeded_2: tuple[Path, Home],
                                              tmp_path: Path) -> None:
    _killed_then_finished(point, seeded_2, tmp_path)


def _killed_then_finished(point: str, seeded: tuple[Path, Home], tmp_path: Path) -> None:
    base, seed = seeded
    shutil.copytree(base / "store", tmp_path / "store")
    home = seed.copy(tmp_path / "desk")
    home.store = type(seed.store)(seed.store.kind, {**seed.store.settings,
                                                     "local_dir": str(tmp_path / "store")},
                                  seed.store.secrets, seed.store.key)
    home.settings = {**home.settings, "local_dir": str(tmp_path / "store")}
    config = (home.root / "config.yaml").read_text()
    (home.root / "config.yaml").write_text(config.replace(str(base / "store"),
                                                          str(tmp_path / "store")))
    _kill_then_finish(point, home)


def _kill_then_finish(point: str, home: Home) -> None:
    kept = every_version(home)
    killed = home.run("prune", "--apply", "--grace-minutes", "0",
                      env={"ROAM_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
    check = home.roam("check", "--read-data")
    assert check.code == 0, f"{point}: {check.out}{check.err}"
    assert every_version(home) == kept
    again = home.roam("prune", "--apply", "--grace-minutes", "0", "--json")
    assert again.code == 0, again.err
    final = home.roam("prune", "--json").json()
    assert final["garbage"] == {} and final["repacked"] == 0
    assert every_version(home) == kept
    assert home.roam("check", "--read-data").code == 0


@pytest.fixture(scope="module")
def seeded_s3(tmp_path_factory: pytest.TempPathFactory, moto_s3: S3Server
              ) -> tuple[str, Home]:
    """The same store on S3 (moto), format 2: its bucket, and the home that filled it."""
    base = tmp_path_factory.mktemp("seed-s3")
    bucket = moto_s3.fresh_bucket()
    store = Store("s3", moto_s3.settings(bucket), moto_s3.env(), new_key())
    return bucket, _seeded_home(base, store, 2)


#: Every step a format-2 prune reaches (it has no tree objects to delete).
POINTS_S3 = tuple(point for point in POINTS if point != "prune:delete:trees")


@pytest.mark.parametrize("point", POINTS_S3)
def test_a_prune_on_s3_killed_at_each_step(point: str, seeded_s3: tuple[str, Home],
                                           moto_s3: S3Server, tmp_path: Path) -> None:
    """As on a local store: each test prunes a copy of the seeded bucket (the moto server)."""
    seed_bucket, seed = seeded_s3
    bucket = moto_s3.fresh_bucket()
    client = moto_s3.client()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=seed_bucket):
        for item in page.get("Contents", []):
            client.copy_object(Bucket=bucket, Key=item["Key"],
                               CopySource={"Bucket": seed_bucket, "Key": item["Key"]})
    home = seed.copy(tmp_path / "desk")
    home.store = Store("s3", moto_s3.settings(bucket), seed.store.secrets, seed.store.key)
    home.settings = {**home.settings, "s3_bucket": bucket}
    config = (home.root / "config.yaml").read_text()
    assert seed_bucket in config
    (home.root / "config.yaml").write_text(config.replace(seed_bucket, bucket))
    _kill_then_finish(point, home)
