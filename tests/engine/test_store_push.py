"""Issue 3: the encrypted store and push, on the memory and local backends."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fleet import Device, new_key
from support.state_files import read_state


def _home(dev: Device, files: int = 0) -> None:
    dev.write("SOUL.md", "I am the soul of this agent.\n")
    dev.write("memories/MEMORY.md", "likes tea\n§\nworks on roam\n")
    dev.write("skills/notes/SKILL.md", "---\nname: notes\n---\nTake notes.\n")
    for i in range(files):
        dev.write(f"skills/bulk{i % 40}/f{i}.bin", os.urandom(4096))
    dev.write(".env", "OPENAI_API_KEY=sk-canary-should-never-travel\n")
    dev.write("auth.json", '{"token": "canary-auth-token"}')


def test_two_homes_push_then_join(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    _home(a)
    assert a.roam("init", "--create-remote").code == 0
    pushed = a.roam("push")
    assert pushed.code == 0, pushed.err
    assert "pushed generation 1" in pushed.out
    assert b.roam("init").code == 0
    status = b.roam("status", "--json").json()
    assert status["remote_generation"] == 1
    assert status["behind"] is True
    assert status["fleet_size"] == 1


def test_push_before_init_is_refused(make_device) -> None:
    a = make_device("a")
    _home(a)
    result = a.roam("push")
    assert result.code == 1
    assert "roam init" in result.err
    assert "Traceback" not in result.err


def test_clean_home_has_nothing_to_push(make_device) -> None:
    a = make_device("a")
    _home(a)
    a.roam("init", "--create-remote")
    assert a.roam("push").code == 0
    again = a.roam("push")
    assert again.code == 0
    assert "nothing to push" in again.out


def test_dry_run_lists_and_uploads_nothing(make_device) -> None:
    a = make_device("a")
    _home(a, files=50)
    a.roam("init", "--create-remote")
    result = a.roam("push", "--dry-run")
    assert result.code == 0
    assert "would push" in result.out
    assert "… " in result.out and "more" in result.out  # capped at 40 lines
    assert a.roam("status", "--json").json()["remote_generation"] == 0


def test_incremental_push_grows_store_by_the_change(tmp_path: Path) -> None:
    key = new_key()
    settings = {"backend": "local", "local_dir": str(tmp_path / "store")}
    a = Device(tmp_path / "a", "a", settings, key)
    _home(a, files=2000)
    a.roam("init", "--create-remote")
    assert a.roam("push").code == 0
    before = _tree_size(tmp_path / "store")
    a.write("skills/bulk7/f7.bin", os.urandom(4096))
    assert a.roam("push").code == 0
    growth = _tree_size(tmp_path / "store") - before
    assert before > 8_000_000
    assert growth < 4096 + 64 * 1024, growth


def _tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_behind_device_cannot_push_until_pull_or_force(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    b.roam("init")
    b.write("SOUL.md", "B's own soul\n")
    refused = b.roam("push")
    assert refused.code == 2
    assert "roam: the remote head moved ahead — run roam pull first" in refused.err
    forced = b.roam("push", "--force", "--yes")  # b never pulled: the guard asks
    assert forced.code == 0, forced.err
    assert a.roam("push").code in (0, 2)
    assert a.roam("push").code == 2 or "nothing" in a.roam("push").out


def test_concurrently_moved_head_exits_2(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    b.roam("init")
    assert b.roam("pull", "--apply").code == 0
    b.write("SOUL.md", "b moved first\n")
    assert b.roam("push").code == 0
    a.write("SOUL.md", "a is late\n")
    result = a.roam("push")
    assert result.code == 2


def test_history_lists_generations_and_path_versions(make_device) -> None:
    a = make_device("a")
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    a.write("SOUL.md", "second soul\n")
    a.roam("push")
    rows = a.roam("history", "--json").json()
    assert [r["generation"] for r in rows] == [2, 1, 0]
    soul = a.roam("history", "SOUL.md", "--json").json()
    assert [r["generation"] for r in soul] == [2, 1]
    assert soul[0]["size"] == len("second soul\n")


def test_secrets_are_never_read_or_stored(make_device, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import io

    a = make_device("a")
    _home(a)
    a.write("state.db", "sqlite canary")
    opened: list[str] = []
    real_open, real_os_open, real_io_open = builtins.open, os.open, io.open

    def spy_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    a.roam("init", "--create-remote")
    assert a.roam("push").code == 0
    monkeypatch.setattr(builtins, "open", real_open)
    monkeypatch.setattr(io, "open", real_io_open)
    monkeypatch.setattr(os, "open", real_os_open)
    touched = [p for p in opened if p.startswith(str(a.root))]
    assert touched, "the spy saw nothing; it cannot prove anything"
    # `.env` is read by the push's secret scanner, for matching only (issue 26); its values
    # never reach the store (tests/engine/test_canary.py, test_secret_scan.py).
    for forbidden in ("auth.json", "state.db"):
        assert not any(p == str(a.root / forbidden) for p in touched), forbidden


def test_wrong_key_is_refused_without_plaintext(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    wrong = new_key()
    result = b.roam("init", key=wrong)
    assert result.code == 1
    assert "cannot open" in result.err
    assert "soul" not in (result.out + result.err).lower()
    assert not (b.root / "roam" / "state.db").exists()


@pytest.mark.parametrize("raw,ok", [
    ("00" * 32, True),
    ("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", True),
    ("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", True),
    ("_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-8", True),
    ("too-short", False),
    ("00" * 31, False),
    ("not base64 at all !!", False),
    ("", False),
])
def test_key_formats(make_device, raw: str, ok: bool) -> None:
    a = make_device("a")
    result = a.roam("init", key=raw)
    assert (result.code == 0) is ok, result.err
    if not ok:
        assert result.err.startswith("roam: ") and len(result.err.strip().splitlines()) == 1
        assert "Traceback" not in result.err


def test_doctor_passes_then_fails_on_rolled_back_head(tmp_path: Path) -> None:
    key = new_key()
    store = tmp_path / "store"
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, key)
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    old_head = (store / "refs" / "HEAD").read_bytes()
    a.write("SOUL.md", "newer\n")
    a.roam("push")
    assert a.roam("doctor").code == 0
    (store / "refs" / "HEAD").write_bytes(old_head)  # an older, authentic HEAD
    doctor = a.roam("doctor")
    assert doctor.code == 1
    assert "rollback refused" in doctor.out
    assert a.roam("pull").code == 1
    # deleting the state does not reset the floor
    (a.root / "roam" / "state.db").unlink()
    assert "rollback refused" in a.roam("doctor").out


def _store_files(store: Path, prefix: str) -> list[Path]:
    return sorted(p for p in (store / "objects" / prefix).rglob("*") if p.is_file())


@pytest.mark.parametrize("damage", ["flip", "truncate", "swap"])
def test_tampered_objects_are_integrity_errors(tmp_path: Path, damage: str) -> None:
    key = new_key()
    store = tmp_path / "store"
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, key)
    b = Device(tmp_path / "b", "b", {"backend": "local", "local_dir": str(store)}, key)
    _home(a)
    a.roam("init", "--create-remote")
    a.roam("push")
    a.write("skills/other/SKILL.md", "another skill\n")
    a.roam("push")
    # every pack, data and tree packs alike (format 2 packs trees): whichever the pull reads
    packs = _store_files(store, "packs")
    originals = [target.read_bytes() for target in packs]
    for number, target in enumerate(packs):
        data = bytearray(originals[number])
        if damage == "flip":
            data[len(data) // 2] ^= 0x01
        elif damage == "truncate":
            data = data[: len(data) - 7]
        else:
            data = bytearray(originals[(number + 1) % len(packs)])
        os.chmod(target, 0o644)
        target.write_bytes(bytes(data))
    b.roam("init")
    before = b.snapshot_bytes()
    result = b.roam("pull", "--apply")
    assert result.code == 1
    assert "integrity error" in result.err
    assert "Traceback" not in result.err
    assert b.snapshot_bytes() == before


def test_foreign_head_is_refused(tmp_path: Path) -> None:
    store1, store2 = tmp_path / "s1", tmp_path / "s2"
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store1)}, new_key())
    c = Device(tmp_path / "c", "c", {"backend": "local", "local_dir": str(store2)}, new_key())
    _home(a)
    a.roam("init", "--create-remote")
    c.roam("init", "--create-remote")
    shutil.copy(store2 / "refs" / "HEAD", store1 / "refs" / "HEAD")
    result = a.roam("status")
    assert result.code == 1
    assert "cannot open" in result.err


def test_full_disk_while_saving_state_keeps_old_state(
        make_device, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from roam_core.engine import statedb

    a = make_device("a")
    _home(a)
    a.roam("init", "--create-remote")
    before = read_state(a.root)

    def full(conn: object) -> None:  # the state's commit, as SQLite fails it on a full disk
        raise OSError(errno.ENOSPC, "No space left on device", "state.db")

    monkeypatch.setattr(statedb, "commit", full)
    result = a.roam("push")
    assert result.code == 1
    assert "No space left" in result.err
    assert read_state(a.root) == before
    leftovers = [p for p in (a.root / "roam").iterdir() if p.name.startswith(".roam-tmp-")]
    assert leftovers == []


def test_emptied_store_is_an_error_not_an_empty_remote(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, new_key())
    a.write("SOUL.md", "s\n")
    a.roam("init", "--create-remote")
    a.roam("push")
    shutil.rmtree(store)
    result = a.roam("status")
    assert result.code == 1
    assert "has no HEAD" in result.err
    assert a.roam("pull").code == 1
