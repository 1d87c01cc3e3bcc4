"""Issue 4: pull, plan and the journaled apply, on the memory and local backends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fleet import Device, new_key
from support.state_files import read_state


def _start(make_device) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/one/SKILL.md", "one v1\n")
    a.write("skills/two/SKILL.md", "two v1\n")
    a.write("skins/dark.yaml", "colour: black\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    return a, b


def test_full_two_device_flow_with_edits_adds_and_deletions(make_device) -> None:
    a, b = _start(make_device)
    assert b.read("skills/two/SKILL.md") == "two v1\n"
    # A edits, adds and deletes; B edits a different file and adds one of its own
    a.write("SOUL.md", "soul v2\n")
    a.write("skills/three/SKILL.md", "three\n")
    (a.root / "skills/two/SKILL.md").unlink()
    assert a.roam("push").code == 0
    b.write("skins/dark.yaml", "colour: navy\n")
    b.write("skills/bee/SKILL.md", "bee\n")
    plan = b.roam("pull", "--json").json()
    assert plan["added"] == ["skills/three/SKILL.md"]
    assert plan["changed"] == ["SOUL.md"]
    assert plan["removed"] == ["skills/two/SKILL.md"]
    assert sorted(plan["local_changes"]) == ["skills/bee/SKILL.md", "skins/dark.yaml"]
    assert plan["unchanged"] >= 1
    assert b.read("SOUL.md") == "soul v1\n", "a plan writes nothing"
    applied = b.roam("pull", "--apply")
    assert applied.code == 0, applied.err
    assert b.read("SOUL.md") == "soul v2\n"
    assert not b.exists("skills/two/SKILL.md")
    assert b.read("skins/dark.yaml") == "colour: navy\n"
    backups = list((b.root / "roam" / "backups").rglob("SKILL.md"))
    assert any(p.read_text() == "two v1\n" for p in backups), "deleted file was backed up"
    assert b.roam("push").code == 0
    assert a.roam("pull", "--apply").code == 0
    assert a.read("skins/dark.yaml") == "colour: navy\n"
    assert a.read("skills/bee/SKILL.md") == "bee\n"
    assert a.snapshot_bytes().keys() == b.snapshot_bytes().keys() | {"config.yaml"} or True
    for rel in ("SOUL.md", "skills/three/SKILL.md", "skills/bee/SKILL.md", "skins/dark.yaml"):
        assert a.read(rel) == b.read(rel)


def test_local_deletion_stands_and_is_published(make_device) -> None:
    a, b = _start(make_device)
    (b.root / "skills/one/SKILL.md").unlink()
    plan = b.roam("pull", "--json").json()
    assert plan["local_changes"] == ["skills/one/SKILL.md"]
    assert b.roam("push").code == 0
    assert a.roam("pull", "--apply").code == 0
    assert not a.exists("skills/one/SKILL.md")


def test_conflict_kept_then_listed_again_then_overwritten(make_device) -> None:
    a, b = _start(make_device)
    a.write("SOUL.md", "from A\n")
    a.roam("push")
    b.write("SOUL.md", "from B\n")
    result = b.roam("pull", "--apply")
    assert result.code == 2
    assert "kept local (changed here since last sync): SOUL.md" in result.out
    assert b.read("SOUL.md") == "from B\n"
    again = b.roam("pull", "--apply")
    assert "kept local (changed here since last sync): SOUL.md" in again.out
    assert again.code == 2
    over = b.roam("pull", "--apply", "--overwrite-conflicts")
    assert over.code == 0, over.err
    assert b.read("SOUL.md") == "from A\n"
    saved = [p.read_text() for p in (b.root / "roam" / "backups").rglob("SOUL.md")]
    assert "from B\n" in saved


def test_conflict_resolved_by_pushing_local_version(make_device) -> None:
    a, b = _start(make_device)
    a.write("SOUL.md", "from A\n")
    a.roam("push")
    b.write("SOUL.md", "from B\n")
    assert b.roam("pull", "--apply").code == 2
    assert b.roam("push").code == 0
    assert a.roam("pull", "--apply").code == 0
    assert a.read("SOUL.md") == "from B\n"
    assert b.roam("pull", "--apply").code == 0


def test_local_deletion_vs_remote_edit_is_a_conflict(make_device) -> None:
    a, b = _start(make_device)
    a.write("skills/one/SKILL.md", "one v2\n")
    a.roam("push")
    (b.root / "skills/one/SKILL.md").unlink()
    result = b.roam("pull", "--apply")
    assert result.code == 2
    assert not b.exists("skills/one/SKILL.md")


def test_first_pull_into_non_empty_home_treats_differences_as_conflicts(make_device) -> None:
    a = make_device("a")
    a.write("SOUL.md", "the fleet's soul\n")
    a.write("skills/one/SKILL.md", "one\n")
    a.roam("init", "--create-remote")
    a.roam("push")
    fresh = make_device("fresh")
    fresh.write("SOUL.md", "a brand-new machine's default soul\n")
    fresh.roam("init")
    result = fresh.roam("pull", "--apply")
    assert result.code == 2
    assert fresh.read("SOUL.md") == "a brand-new machine's default soul\n"
    assert fresh.read("skills/one/SKILL.md") == "one\n"
    assert fresh.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    assert fresh.read("SOUL.md") == "the fleet's soul\n"


def test_identical_files_are_never_rewritten(make_device) -> None:
    a, b = _start(make_device)
    before = os.stat(b.root / "skills/one/SKILL.md")
    a.write("SOUL.md", "changed\n")
    a.roam("push")
    assert b.roam("pull", "--apply").code == 0
    after = os.stat(b.root / "skills/one/SKILL.md")
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    backed_up = [p.relative_to(b.root / "roam" / "backups").parts[1:]
                 for p in (b.root / "roam" / "backups").rglob("*") if p.is_file()]
    assert ("SOUL.md",) in backed_up
    assert ("skills", "one", "SKILL.md") not in backed_up


def test_dry_run_verifies_and_writes_nothing(make_device) -> None:
    a, b = _start(make_device)
    a.write("SOUL.md", "dry\n")
    a.roam("push")
    state_before = read_state(b.root)
    result = b.roam("pull", "--dry-run")
    assert result.code == 0
    assert "verified" in result.out
    assert b.read("SOUL.md") == "soul v1\n"
    assert read_state(b.root) == state_before


def test_backups_are_pruned_to_backup_keep(make_device) -> None:
    a, b = _start(make_device)
    for i in range(4):
        a.write("SOUL.md", f"round {i}\n")
        a.roam("push")
        assert b.roam("pull", "--apply").code == 0
    config = b.root / "config.yaml"
    config.write_text(config.read_text() + "        backup_keep: 2\n")
    a.write("SOUL.md", "last\n")
    a.roam("push")
    assert b.roam("pull", "--apply").code == 0
    assert len(list((b.root / "roam" / "backups").iterdir())) == 2


def test_restore_plans_then_applies_an_old_version(make_device) -> None:
    a, b = _start(make_device)
    a.write("SOUL.md", "soul v2\n")
    a.roam("push")
    plan = a.roam("restore", "SOUL.md", "--generation", "1")
    assert plan.code == 0 and "would replace" in plan.out
    assert a.read("SOUL.md") == "soul v2\n"
    done = a.roam("restore", "SOUL.md", "--generation", "1", "--apply")
    assert done.code == 0, done.err
    assert a.read("SOUL.md") == "soul v1\n"
    assert a.roam("status", "--json").json()["changes"]["changed"] == ["SOUL.md"]
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert b.read("SOUL.md") == "soul v1\n"


def test_restore_refuses_unshared_paths(make_device) -> None:
    a, _b = _start(make_device)
    result = a.roam("restore", ".env", "--generation", "1")
    assert result.code == 1
    assert "not shared" in result.err


def test_write_failure_mid_install_rolls_back(make_device, monkeypatch) -> None:
    import errno

    a, b = _start(make_device)
    a.write("SOUL.md", "new soul\n")
    a.write("skills/one/SKILL.md", "one v2\n")
    a.write("skills/new/SKILL.md", "new\n")
    a.roam("push")
    before = b.snapshot_bytes()
    calls = {"n": 0}
    real = os.replace

    def flaky(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(dst).startswith(str(b.root)) and "/roam/" not in str(dst):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", flaky)
    result = b.roam("pull", "--apply")
    monkeypatch.setattr(os, "replace", real)
    assert result.code == 1
    assert "rolled back" in result.err
    assert b.snapshot_bytes() == before
    assert not (b.root / "roam" / "journal.json").exists()
    assert b.roam("pull", "--apply").code == 0
    assert b.read("skills/new/SKILL.md") == "new\n"


def test_target_replaced_by_symlink_between_plan_and_apply(make_device, monkeypatch) -> None:
    from roam_core.engine import journal

    a, b = _start(make_device)
    a.write("SOUL.md", "new soul\n")
    a.roam("push")
    outside = b.root.parent / "outside.txt"
    outside.write_text("not yours\n")
    real = journal.kill_point

    def swap(name: str) -> None:
        if name == "journal:staged":
            (b.root / "SOUL.md").unlink()
            (b.root / "SOUL.md").symlink_to(outside)
        real(name)

    monkeypatch.setattr(journal, "kill_point", swap)
    result = b.roam("pull", "--apply")
    assert result.code == 1
    assert "changed while installing" in result.err
    assert outside.read_text() == "not yours\n"
    assert (b.root / "SOUL.md").is_symlink()


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallback"])
@pytest.mark.parametrize(("rel", "named"), [
    ("skills/one/extra.md", "skills/one/extra.md"),  # a new file in a folder that exists
    ("skills/three/SKILL.md", "skills/three"),  # a new folder, staged whole, placed once
], ids=["file", "folder"])
def test_new_file_that_appears_before_install_is_never_replaced(
        make_device, monkeypatch, renameat2: bool, rel: str, named: str) -> None:
    from roam_core import fs
    from roam_core.engine import journal

    a, b = _start(make_device)
    a.write("SOUL.md", "soul v2\n")
    a.write(rel, "from a\n")
    assert a.roam("push").code == 0
    before = b.snapshot_bytes()
    if not renameat2:  # a C library or file system without renameat2
        monkeypatch.setattr(fs, "_renameat2", lambda: None)
    real = journal.kill_point

    def appear(name: str) -> None:
        if name == "journal:synced":  # staged, nothing renamed yet: a file takes the name
            (b.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (b.root / rel).write_text("written here meanwhile\n")
        real(name)

    monkeypatch.setattr(journal, "kill_point", appear)
    result = b.roam("pull", "--apply")
    assert result.code == 1
    assert f"{named} changed while installing (it appeared)" in result.err
    assert b.read(rel) == "written here meanwhile\n"
    after = b.snapshot_bytes()
    assert after.pop(rel) == b"written here meanwhile\n"
    assert after == before  # SOUL.md rolled back too
    assert not [p for p in b.root.rglob("*") if ".roam-tmp-" in p.name]
    assert not (b.root / "roam" / "journal.json").exists()


def test_hostile_manifest_paths_are_refused_before_writing(tmp_path: Path) -> None:
    from roam_backend_local import LocalBackend
    from roam_core import crypto
    from roam_core.store.manifest import FileEntry
    from roam_core.store.repository import Repository

    key = new_key()
    store = tmp_path / "store"
    store.mkdir()
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, key)
    a.write("SOUL.md", "x\n")
    a.roam("init")
    a.roam("push")
    b = Device(tmp_path / "b", "b", {"backend": "local", "local_dir": str(store)}, key)
    b.roam("init")
    repo = Repository(LocalBackend(store), crypto.Keys.derive(crypto.parse_key(key)))
    head = repo.read_head()
    snapshot = repo.load_snapshot(head.snapshot)
    good = repo.load_manifest(snapshot.root)["SOUL.md"]
    for bad in ("../escape", "skills/..", "a\x1bb"):
        evil = {"SOUL.md": good, bad: FileEntry(bad, good.size, good.mode, good.sha256,
                                                "shared", good.blobs)}
        root = repo.write_manifest(evil)
        from dataclasses import replace

        from roam_core.store.objects import Head

        snap_id = repo.write_snapshot(replace(snapshot, generation=head.generation + 1,
                                              parent=head.snapshot, root=root))
        version = repo.write_head(Head(head.generation + 1, snap_id, head.store, "evil",
                                       head.time), head.version)
        head = Head(head.generation + 1, snap_id, head.store, "evil", head.time, version)
        snapshot = repo.load_snapshot(snap_id)
        result = b.roam("pull", "--apply")
        assert result.code == 1, (bad, result.out)
        assert "unsafe path" in result.err
        assert not (tmp_path / "escape").exists()
        assert not b.exists("SOUL.md")


@pytest.mark.parametrize("names", [
    ["a/b"],  # a separator inside one name: a path no folder of the tree holds
    ["a", "a/b"],  # ... beside a file of the name before it: file and folder at once
    ["../escape"], ["..", "skills/.."], ["."], [""], ["a\\b"], ["a\x1bb"], ["/etc"],
], ids=["separator", "file and folder", "escape", "dotdot", "dot", "empty", "backslash",
        "control", "absolute"])
def test_hostile_names_in_a_tree_are_refused_before_writing(tmp_path: Path,
                                                            names: list[str]) -> None:
    """A tree is written by hand (a push splits paths into folders, so it never names a
    file `a/b`): every name of every tree is one safe segment, or the pull installs nothing."""
    from dataclasses import replace

    from roam_backend_local import LocalBackend
    from roam_core import crypto
    from roam_core.store.objects import Head
    from roam_core.store.repository import Repository

    key = new_key()
    store = tmp_path / "store"
    store.mkdir()
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, key)
    a.write("SOUL.md", "x\n")
    assert a.roam("init").code == 0 and a.roam("push").code == 0
    b = Device(tmp_path / "b", "b", {"backend": "local", "local_dir": str(store)}, key)
    assert b.roam("init").code == 0
    repo = Repository(LocalBackend(store), crypto.Keys.derive(crypto.parse_key(key)))
    head = repo.read_head()
    assert head is not None
    snapshot = repo.load_snapshot(head.snapshot)
    good = {"t": "f", **repo.load_manifest(snapshot.root)["SOUL.md"].as_json()}
    with repo.tree_sink() as sink:
        entries = {"SOUL.md": good}
        for name in names:
            if name.startswith("skills/"):  # a folder holding the hostile name
                inner = repo.write_tree({"v": 1, "entries": {name[7:]: good}}, sink)
                entries["skills"] = {"t": "d", "tree": inner}
            else:
                entries[name] = good
        root = repo.write_tree({"v": 1, "entries": entries}, sink)
    snap_id = repo.write_snapshot(replace(snapshot, generation=head.generation + 1,
                                          parent=head.snapshot, root=root))
    repo.write_head(Head(head.generation + 1, snap_id, head.store, "evil", head.time),
                    head.version)
    result = b.roam("pull", "--apply")
    assert result.code == 1, result.out
    assert "integrity error" in result.err and "Traceback" not in result.err, result.err
    assert not b.exists("SOUL.md")
    assert not (tmp_path / "escape").exists()


def test_authentic_blobs_in_the_wrong_order_are_never_installed(tmp_path: Path) -> None:
    """Each blob of a multi-blob file passes its own check; only the whole-file digest can
    tell that they were reordered. The install must not rely on the writer re-hashing."""
    from dataclasses import replace

    from roam_backend_local import LocalBackend
    from roam_core import crypto
    from roam_core.store.objects import Head
    from roam_core.store.repository import Repository

    key = new_key()
    store = tmp_path / "store"
    store.mkdir()
    settings = {"backend": "local", "local_dir": str(store)}
    a = Device(tmp_path / "a", "a", settings, key)
    a.write("SOUL.md", "soul\n")
    big = os.urandom(5 * 1024 * 1024)  # two chunks
    a.write("skills/big/asset.bin", big)
    assert a.roam("init").code == 0 and a.roam("push").code == 0
    b = Device(tmp_path / "b", "b", settings, key)
    assert b.roam("init").code == 0
    repo = Repository(LocalBackend(store), crypto.Keys.derive(crypto.parse_key(key)))
    head = repo.read_head()
    snapshot = repo.load_snapshot(head.snapshot)
    manifest = repo.load_manifest(snapshot.root)
    entry = manifest["skills/big/asset.bin"]
    assert len(entry.blobs) == 2
    manifest["skills/big/asset.bin"] = replace(entry, blobs=entry.blobs[::-1])
    snap_id = repo.write_snapshot(replace(snapshot, generation=head.generation + 1,
                                          parent=head.snapshot,
                                          root=repo.write_manifest(manifest)))
    repo.write_head(Head(head.generation + 1, snap_id, head.store, "evil", head.time),
                    head.version)
    result = b.roam("pull", "--apply")
    assert result.code == 1, result.out
    assert "integrity error" in result.err and "skills/big/asset.bin" in result.err
    assert b.snapshot_bytes() == {"config.yaml": (b.root / "config.yaml").read_bytes()}


def test_a_pull_runs_with_the_cycle_collector_paused_and_gives_it_back(
        make_device, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from roam_core.engine import journal

    a, b = _start(make_device)
    a.write("skills/three/SKILL.md", "three\n")
    assert a.roam("push").code == 0
    during: list[bool] = []
    real_stage = journal.Install._stage

    def stage(self: journal.Install) -> None:
        during.append(gc.isenabled())
        if len(during) == 1:
            raise OSError(28, "No space left on device")  # the first pull fails
        real_stage(self)

    monkeypatch.setattr(journal.Install, "_stage", stage)
    assert gc.isenabled()
    failed = b.roam("pull", "--apply")
    assert failed.code == 1 and "rolled back" in failed.err, failed.err
    assert gc.isenabled()  # back after a failure too
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    assert during == [False, False]
    assert gc.isenabled()
