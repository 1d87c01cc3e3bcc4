"""`roam key rotate` through real `roam` processes on local, S3 (moto server) and git stores.

The fleet story: a rotates, b (still on the old key) gets the one-line message, sets the new
key and pushes from the same generation, a pulls it; every generation reads back as before and
the old key opens nothing the store holds but the tombstone. Then SIGKILL at every step of a
rotation: a rerun with the same keys converges on the same store, nothing lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, fast_dir, new_key, stores
from campaign.storeview import generations, manifest_of, open_repository

from roam_core import crypto
from support.keyaudit import audit, every_object

pytest_plugins = ("support.s3_servers",)

KILL = "ROAM_TEST_KILL_AT"
POINTS = ("rotate:packs", "rotate:blobs", "rotate:snapshot", "rotate:doomed", "rotate:head",
          "rotate:sweep")
#: git publishes its objects with the next ref swap, and deletes by commits: a kill just
#: before HEAD moves loses every staged object (the rerun writes them again), one in the
#: middle of the deletions leaves a published HEAD and its doomed lists
GIT_POINTS = ("rotate:doomed", "rotate:sweep")


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Home, Home]]:
    kind = getattr(request, "param", "local")
    with fast_dir("roam-rotate-") as tmp, stores(kind, tmp, request) as store:
        a, b = Home(tmp / "a", "a", store), Home(tmp / "b", "b", store)
        a.write("SOUL.md", "soul v1\n")
        a.write("memories/MEMORY.md", "remember\n" * 40)
        a.write("skills/one/SKILL.md", "one\n" * 2000)
        _ok(a, "init", "--create-remote")
        _ok(a, "push")
        a.write("SOUL.md", "soul v2\n")
        _ok(a, "push")
        _ok(b, "init")
        _ok(b, "pull", "--apply")
        yield a, b


def _ok(home: Home, *args: str, env: dict[str, str] | None = None) -> str:
    result = home.run(*args, env=env, timeout=180)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def _history(home: Home, tmp: Path) -> dict[int, dict[str, bytes]]:
    with open_repository(home.store, tmp) as repo:
        return {generation: {path: repo.read_content(entry)
                             for path, entry in manifest_of(repo, snapshot).items()}
                for generation, (_id, snapshot) in generations(repo).items()}


def _only_new_key_opens(home: Home, old: str, tmp: Path) -> None:
    with open_repository(home.store, tmp) as repo:
        held = every_object(repo.backend)
        opened_new = audit(repo.backend, repo.keys)
        opened_old = audit(repo.backend, crypto.Keys.derive(crypto.parse_key(old)))
    assert opened_old == {"rotated": 1}, opened_old
    assert opened_new + Counter({"rotated": 1}) == held, (opened_new, held)


def _deletes(home: Home, tmp: Path) -> bool:
    with open_repository(home.store, tmp) as repo:
        return repo.backend.capabilities.deletes


@pytest.mark.parametrize("pair", ["local", "s3", "git"], indirect=True)
def test_a_rotated_fleet_keeps_syncing(pair: tuple[Home, Home]) -> None:
    a, b = pair
    tmp = a.root.parent
    before = _history(a, tmp / "before")
    old, new = a.store.key, new_key()
    if not _deletes(a, tmp / "probe"):
        # a backend that cannot delete is refused before anything is written
        held = every_object_of(a, tmp / "held")
        refused = a.run("key", "rotate", env={"ROAM_NEW_ARCHIVE_KEY": new})
        assert refused.returncode == 1
        assert "cannot delete objects" in refused.stderr and "nothing was changed" in \
            refused.stderr
        assert every_object_of(a, tmp / "after") == held
        return
    out = _ok(a, "key", "rotate", env={"ROAM_NEW_ARCHIVE_KEY": new})
    assert "rotated generation 2" in out

    stale = b.run("pull")
    assert stale.returncode == 1
    line = stale.stderr.strip()
    assert line.startswith("roam: key error: the fleet's key was rotated on ") \
        and "by a; set the new ROAM_ARCHIVE_KEY" in line and "\n" not in line, line

    a.store.key = new
    _only_new_key_opens(a, old, tmp / "audit")
    assert _history(a, tmp / "after") == before
    b.write("SOUL.md", "soul v3 from b\n")
    _ok(b, "push")
    _ok(a, "pull", "--apply")
    assert (a.root / "SOUL.md").read_text() == "soul v3 from b\n"
    _ok(a, "check", "--read-data")


def every_object_of(home: Home, tmp: Path) -> Counter[str]:
    with open_repository(home.store, tmp) as repo:
        return every_object(repo.backend)


@pytest.mark.parametrize(("pair", "point"),
                         [("local", point) for point in POINTS]
                         + [("git", point) for point in GIT_POINTS], indirect=["pair"])
def test_rotation_killed_at_each_step_converges(pair: tuple[Home, Home], point: str) -> None:
    a, b = pair
    tmp = a.root.parent
    before = _history(a, tmp / "before")
    old, new = a.store.key, new_key()
    killed = a.run("key", "rotate", env={"ROAM_NEW_ARCHIVE_KEY": new, KILL: point})
    assert killed.returncode == -9, (point, killed.stdout, killed.stderr)
    if point in ("rotate:packs", "rotate:blobs", "rotate:snapshot", "rotate:doomed"):
        # HEAD has not moved: the old store is whole and the fleet keeps syncing
        b.write("skills/mid/SKILL.md", "pushed while the rotation was cut\n")
        _ok(b, "push")
        before = _history(a, tmp / "before-rerun")
    out = _ok(a, "key", "rotate", env={"ROAM_NEW_ARCHIVE_KEY": new})
    assert "rotated generation" in out
    a.store.key = new
    _only_new_key_opens(a, old, tmp / "audit")
    assert _history(a, tmp / "after") == before
    _ok(a, "check", "--read-data")
    _ok(b, "pull", "--apply")
    b.write("SOUL.md", "after the rotation\n")
    _ok(b, "push")
