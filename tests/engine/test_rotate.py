"""`roam key rotate` on the in-memory reference backend, through the CLI in this process.

A fleet of two devices with history is rotated; then the old key opens nothing the store
holds but the tombstone, a device still on the old key gets the one-line message, and once
it has the new key it pulls and pushes from the same generation. A rotation cut at any of
its steps (in this process: an exception where the CLI test kills the process) is resumed by
a rerun and converges on the same store; that test runs on S3 (moto server) too, where
every step is a network request that a cut may fall between.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, new_key, stores
from campaign.storeview import generations, manifest_of, open_repository

from roam_core import crypto
from roam_core.engine import reseal as reseal_module
from roam_core.engine import rotate as rotate_module
from roam_core.store.repository import Repository
from support.keyaudit import audit, every_object

pytest_plugins = ("support.s3_servers",)

POINTS = ("rotate:packs", "rotate:blobs", "rotate:snapshot", "rotate:doomed", "rotate:head",
          "rotate:sweep")


class Killed(BaseException):
    """Stands for SIGKILL in this process: nothing after the kill point runs."""


def _arm(monkeypatch: pytest.MonkeyPatch, point: str | None) -> None:
    """Kill (raise `Killed`) at `point` of a rotation; None disarms."""

    def kill_at(name: str) -> None:
        if name == point:
            raise Killed(name)

    for module in (rotate_module, reseal_module):
        monkeypatch.setattr(module, "kill_point", kill_at)


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Home, Home]]:
    """Two devices with history on the in-memory store (or the test's `kind`, if it has one)."""
    kind = request.node.callspec.params.get("kind", "memory") \
        if hasattr(request.node, "callspec") else "memory"
    with stores(kind, tmp_path, request) as store:
        runner = Runner()
        a, b = Home(tmp_path / "a", "a", store, runner), Home(tmp_path / "b", "b", store, runner)
        a.write("SOUL.md", "soul v1\n")
        a.write("memories/MEMORY.md", "remember\n" * 50)
        a.write("skills/big/data.bin", os.urandom(300_000))
        assert a.roam("init", "--create-remote").code == 0
        assert a.roam("push").code == 0
        a.write("SOUL.md", "soul v2\n")
        a.write("skills/two/SKILL.md", "two\n")
        assert a.roam("push").code == 0
        assert b.roam("init").code == 0
        assert b.roam("pull", "--apply").code == 0
        yield a, b


def _rotate(home: Home, key: str, *args: str) -> tuple[int, str, str]:
    os.environ["ROAM_NEW_ARCHIVE_KEY"] = key
    try:
        result = home.roam("key", "rotate", *args)
    finally:
        del os.environ["ROAM_NEW_ARCHIVE_KEY"]
    return result.code, result.out, result.err


def _history(home: Home, tmp: Path) -> dict[int, dict[str, bytes]]:
    """Every generation's files, read back through the store."""
    with open_repository(home.store, tmp) as repo:
        return {generation: {path: repo.read_content(entry)
                             for path, entry in manifest_of(repo, snapshot).items()}
                for generation, (_id, snapshot) in generations(repo).items()}


def _backend(home: Home, tmp: Path) -> Iterator[Repository]:
    return open_repository(home.store, tmp)


def _assert_only_new_key_opens(home: Home, old: str, tmp: Path) -> None:
    with _backend(home, tmp) as repo:
        held = every_object(repo.backend)
        opened_new = audit(repo.backend, repo.keys)
        opened_old = audit(repo.backend, crypto.Keys.derive(crypto.parse_key(old)))
    assert opened_old == {"rotated": 1}, opened_old
    assert opened_new + Counter({"rotated": 1}) == held, (opened_new, held)


def test_rotate_keeps_history_and_the_fleet_syncing(fleet: tuple[Home, Home],
                                                   tmp_path: Path) -> None:
    a, b = fleet
    before = _history(a, tmp_path / "before")
    old, new = a.store.key, new_key()
    code, out, err = _rotate(a, new)
    assert code == 0, out + err
    assert "rotated generation 2" in out

    # b still holds the old key: one line, naming when and who
    refused = b.roam("push")
    assert refused.code == 1
    assert refused.err.strip().startswith("roam: key error: the fleet's key was rotated on ")
    assert "by a; set the new ROAM_ARCHIVE_KEY" in refused.err
    assert len(refused.err.strip().splitlines()) == 1

    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    assert _history(a, tmp_path / "after") == before
    # b continues from the same generation: no pull needed, its base still merges
    b.write("SOUL.md", "soul v3 from b\n")
    pushed = b.roam("push", "--json")
    assert pushed.code == 0, pushed.out + pushed.err
    assert pushed.json()["generation"] == 3
    assert pushed.json()["changed"] == ["SOUL.md"]
    pulled = a.roam("pull", "--apply")
    assert pulled.code == 0, pulled.out + pulled.err
    assert (a.root / "SOUL.md").read_text() == "soul v3 from b\n"
    checked = a.roam("check", "--read-data", "--json")
    assert checked.code == 0, checked.out


def test_a_format_2_store_stays_format_2(fleet: tuple[Home, Home], tmp_path: Path) -> None:
    a, _b = fleet
    with _backend(a, tmp_path / "before") as repo:
        head = repo.read_head()
        assert head is not None and head.format == 2, "the fleet fixture founds format 2"
    code, out, err = _rotate(a, (new := new_key()))
    assert code == 0, out + err
    a.store.key = new
    with _backend(a, tmp_path / "after") as repo:
        head = repo.read_head()
        assert head is not None and head.format == 2, head
        loose = [key for key in repo.backend.list("trees/")]
    assert not loose, f"a rotated format-2 store wrote trees one object each: {loose[:3]}"


def test_every_object_kind_is_re_keyed(fleet: tuple[Home, Home], tmp_path: Path) -> None:
    """A void record (kind V) and an unreferenced pack are re-keyed or removed too."""
    a, _b = fleet
    with _backend(a, tmp_path / "plant") as repo:
        repo.write_void({"packs/00/" + "0" * 64}, set())
        assert every_object(repo.backend)["voids"] == 1
    old, new = a.store.key, new_key()
    assert _rotate(a, new)[0] == 0
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")


def test_forget_records_are_re_keyed_with_their_snapshots(fleet: tuple[Home, Home],
                                                         tmp_path: Path) -> None:
    """A forget record (kind F) names snapshots: it moves to the new key and the new ids."""
    from roam_core.store.objects import forget_key

    a, _b = fleet
    with _backend(a, tmp_path / "plant") as repo:
        chain = generations(repo)
        value = {"v": 1, "device": "a", "device_id": "x", "time": "2026-01-01T00:00:00+00:00",
                 "policy": "keep-last 1",
                 "generations": [{"generation": 1, "snapshot": chain[1][0],
                                  "parent": chain[0][0]}]}
        repo.write_record(crypto.KIND_FORGET, value, forget_key)
    old, new = a.store.key, new_key()
    assert _rotate(a, new)[0] == 0
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    with _backend(a, tmp_path / "read") as repo:
        chain = generations(repo, with_forgotten=True)  # the record names generation 1
        [key] = list(repo.backend.list("forgets/"))
        record_id = key.rpartition("/")[2]
        found = repo.read_record(crypto.KIND_FORGET, record_id, key, "forgets")
    assert found["generations"] == [{"generation": 1, "snapshot": chain[1][0],
                                     "parent": chain[0][0]}]
    assert found["policy"] == "keep-last 1"


def test_a_rerun_deletes_what_a_late_old_key_push_left(fleet: tuple[Home, Home],
                                                       tmp_path: Path) -> None:
    """Objects an old-key push uploaded after the rotation listed the store, then gave up."""
    a, _b = fleet
    old, new = a.store.key, new_key()
    assert _rotate(a, new)[0] == 0
    with _backend(a, tmp_path / "late") as repo:  # still the old key: a device that lost
        from roam_core.store.packer import Packer

        packer = Packer(repo, {})
        packer.add_chunk(b"uploaded by a device that had not heard of the rotation")
        packer.finish()
        repo.write_void(set(), {"0" * 64})
        assert audit(repo.backend, repo.keys)["index"] == 1
    code, out, err = _rotate(a, new)
    assert code == 0 and "already uses the new key" in out, out + err
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")


def test_rotation_refuses_an_object_kind_it_does_not_know(fleet: tuple[Home, Home],
                                                          tmp_path: Path) -> None:
    a, _b = fleet
    with _backend(a, tmp_path / "plant") as repo:
        repo.backend.put_new("future/thing", b"something a newer roam wrote")
        held = every_object(repo.backend)
    code, _out, err = _rotate(a, new_key())
    assert code == 1
    assert "future/thing" in err and "upgrade roam" in err
    with _backend(a, tmp_path / "after") as repo:
        assert every_object(repo.backend) == held  # nothing was written


@pytest.mark.parametrize("kind", ["memory", "s3"])
@pytest.mark.parametrize("point", POINTS)
def test_rotation_cut_at_each_step_resumes(fleet: tuple[Home, Home], tmp_path: Path,
                                           point: str, kind: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = fleet
    before = _history(a, tmp_path / "before")
    _arm(monkeypatch, point)
    old, new = a.store.key, new_key()
    with pytest.raises(Killed):
        _rotate(a, new)
    _arm(monkeypatch, None)
    a.runner = Runner()  # the killed run's lock and caches die with its process
    code, out, err = _rotate(a, new)
    assert code == 0, out + err
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    assert _history(a, tmp_path / "after") == before
    b.write("SOUL.md", "after the rotation\n")
    assert b.roam("push").code == 0


def test_an_old_key_push_while_rotation_was_cut_is_kept(fleet: tuple[Home, Home],
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """b pushes under the old key between two runs: the rerun re-seals its generation too."""
    a, b = fleet
    _arm(monkeypatch, "rotate:doomed")
    old, new = a.store.key, new_key()
    with pytest.raises(Killed):
        _rotate(a, new)
    b.write("skills/late/SKILL.md", "pushed under the old key mid-rotation\n")
    assert b.roam("push").code == 0
    _arm(monkeypatch, None)
    code, out, err = _rotate(a, new)
    assert code == 0, out + err
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    history = _history(a, tmp_path / "after")
    assert max(history) == 3
    assert history[3]["skills/late/SKILL.md"] == b"pushed under the old key mid-rotation\n"


@pytest.mark.parametrize("kind", ["memory", "git"])
def test_rotation_pauses_before_the_deadline_and_resumes(kind: str, fleet: tuple[Home, Home],
                                                         tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    a, _b = fleet
    before = _history(a, tmp_path / "before")

    calls = [0]

    def remaining() -> float:
        """Time for two steps, then too little."""
        calls[0] += 1
        return 900.0 if calls[0] <= 2 else 1.0

    monkeypatch.setattr(rotate_module.Rotation, "_remaining", staticmethod(remaining))
    old, new = a.store.key, new_key()
    code, out, _err = _rotate(a, new)
    assert code == 75, out
    assert "rotation paused" in out
    # what the paused run re-sealed is in the store (on git the lease's release is the ref
    # swap that publishes it), so the next run continues instead of starting over
    runs = 1
    while code == 75 and runs < 20:
        calls[0] = 0
        code, out, _err = _rotate(a, new)
        runs += 1
    assert code == 0 and runs > 2, (code, runs, out)
    a.store.key = new
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    assert _history(a, tmp_path / "after") == before


def test_generate_prints_the_key_once_and_rotates_to_it(fleet: tuple[Home, Home],
                                                        tmp_path: Path) -> None:
    a, _b = fleet
    old = a.store.key
    result = a.roam("key", "rotate", "--generate")
    assert result.code == 0, result.out + result.err
    lines = [line for line in result.out.splitlines() if line.startswith("new archive key")]
    assert len(lines) == 1
    made = lines[0].rpartition(": ")[2]
    a.store.key = made
    _assert_only_new_key_opens(a, old, tmp_path / "audit")
    again = a.roam("key", "rotate", "--generate", "--json")  # now from the made key
    assert again.code == 0
    assert again.json()["complete"] is True and len(again.json()["new_key"]) >= 43


def test_bad_new_keys_are_one_line_errors(fleet: tuple[Home, Home]) -> None:
    a, _b = fleet
    missing = a.roam("key", "rotate")
    assert missing.code == 1 and "ROAM_NEW_ARCHIVE_KEY is not set" in missing.err
    code, _out, err = _rotate(a, "not-a-key")
    assert code == 1 and "ROAM_NEW_ARCHIVE_KEY" in err and "Traceback" not in err
    code, _out, err = _rotate(a, a.store.key)
    assert code == 1 and "already uses" in err


def test_rotation_waits_for_a_prune_holding_the_lease(fleet: tuple[Home, Home],
                                                      tmp_path: Path) -> None:
    """One deleter at a time: a rotation refuses (exit 2) while another device holds LEASE."""
    from roam_core.engine import lease as lease_module

    a, _b = fleet
    with _backend(a, tmp_path / "prune") as repo:
        held = lease_module.acquire(repo, "someone-else", "laptop", "prune")
        code, _out, err = _rotate(a, new_key())
        assert code == 2 and "laptop holds the store's lease for prune" in err, err
        held.release()
    code, out, err = _rotate(a, new_key())
    assert code == 0, out + err
