"""Issue 19 (1): the rollback floor belongs to the store's identity, not to how it is spelled.

A replayed older HEAD is refused whatever path, URL or alias reaches the store, whether
`floor.json` or `state.json` survives alone, and at `init`; a damaged floor or state file
is a one-line error that says how to proceed, never a traceback and never a silent reset.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fleet import Device, new_key
from support.state_files import plant_legacy, read_state


def _local(tmp_path: Path, name: str, store: Path, key: str) -> Device:
    return Device(tmp_path / name, name, {"backend": "local", "local_dir": str(store)}, key)


def _two_generations(dev: Device, head_file: Path) -> bytes:
    """Push generations 1 and 2; return HEAD's bytes at generation 1 (to replay later)."""
    dev.write("SOUL.md", "soul v1\n")
    assert dev.roam("init", "--create-remote").code == 0
    assert dev.roam("push").code == 0
    old = head_file.read_bytes()
    dev.write("SOUL.md", "soul v2\n")
    assert dev.roam("push").code == 0
    return old


def _refused(result) -> None:  # type: ignore[no-untyped-def]
    assert result.code == 1, (result.out, result.err)
    assert "rollback refused" in result.err + result.out, (result.out, result.err)
    assert "Traceback" not in result.err


def _point_at(dev: Device, store: str) -> None:
    text = (dev.root / "config.yaml").read_text()
    lines = [line if "local_dir" not in line else f"        local_dir: {json.dumps(store)}"
             for line in text.splitlines()]
    (dev.root / "config.yaml").write_text("\n".join(lines) + "\n")


def test_a_symlinked_path_to_the_same_store_keeps_the_floor(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    old = _two_generations(a, store / "refs" / "HEAD")
    alias = tmp_path / "alias"
    alias.symlink_to(store)
    _point_at(a, str(alias))
    (store / "refs" / "HEAD").write_bytes(old)  # the provider replays generation 1
    _refused(a.roam("pull", "--apply"))
    assert a.read("SOUL.md") == "soul v2\n"
    _refused(a.roam("push"))


def _replayed_after_losing(tmp_path: Path, lost: str) -> Device:
    """A device at generation 2 that lost `roam/<lost>`, on a store replaying generation 1."""
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    old = _two_generations(a, store / "refs" / "HEAD")
    for name in (lost, f"{lost}-journal"):
        (a.root / "roam" / name).unlink(missing_ok=True)
    (store / "refs" / "HEAD").write_bytes(old)
    return a


def test_the_state_alone_holds_the_floor(tmp_path: Path) -> None:
    a = _replayed_after_losing(tmp_path, "floor.json")
    _refused(a.roam("pull", "--apply"))
    assert a.read("SOUL.md") == "soul v2\n"
    check = a.roam("check")
    assert check.code == 1 and "rolled back" in check.out


def test_init_refuses_to_join_below_the_floor_it_holds(tmp_path: Path) -> None:
    a = _replayed_after_losing(tmp_path, "state.db")
    _refused(a.roam("init"))
    assert not (a.root / "roam" / "state.db").exists()
    assert a.read("SOUL.md") == "soul v2\n"


@pytest.mark.parametrize("content", ['{"file:///x": "three"}', "[1, 2]", "{not json",
                                     '{"v": 2, "stores": {"ab": {"generation": "x"}}}'])
def test_a_damaged_floor_is_one_line_and_never_reset(tmp_path: Path, content: str) -> None:
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    _two_generations(a, store / "refs" / "HEAD")
    floor = a.root / "roam" / "floor.json"
    floor.write_text(content)
    a.write("SOUL.md", "soul v3\n")
    for args in (("status",), ("pull",), ("push",), ("check",)):
        result = a.roam(*args)
        assert result.code == 1, (args, result.out, result.err)
        assert "Traceback" not in result.err
        assert result.err.startswith("roam: ") and len(result.err.strip().splitlines()) == 1
        assert "floor.json" in result.err and "docs/troubleshooting.md" in result.err
    assert floor.read_text() == content  # never silently rewritten


@pytest.mark.parametrize("content", ['{"device": 3, "store": "x", "identity": "y"}',
                                     '{"device": "a", "store": "s", "identity": "i", '
                                     '"generation": "two"}', '"text"'])
def test_a_damaged_state_is_one_line(tmp_path: Path, content: str) -> None:
    """A damaged `state.json` left by an earlier roam is refused when it is to be migrated."""
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    _two_generations(a, store / "refs" / "HEAD")
    plant_legacy(a.root, content)
    for args in (("status",), ("pull", "--apply"), ("push",)):
        result = a.roam(*args)
        assert result.code == 1, (args, result.out, result.err)
        assert "Traceback" not in result.err
        assert len(result.err.strip().splitlines()) == 1 and "state.json" in result.err
    assert (a.root / "roam" / "state.json").read_text() == content  # never migrated


@pytest.mark.parametrize("content", [b"not a database at all",
                                     b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_damaged_state_database_is_one_line(tmp_path: Path, content: bytes) -> None:
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    _two_generations(a, store / "refs" / "HEAD")
    plant_legacy(a.root, "{}")
    (a.root / "roam" / "state.json").unlink()
    (a.root / "roam" / "state.db").write_bytes(content)
    for args in (("status",), ("pull", "--apply"), ("push",)):
        result = a.roam(*args)
        assert result.code == 1, (args, result.out, result.err)
        assert "Traceback" not in result.err
        assert len(result.err.strip().splitlines()) == 1 and "state.db" in result.err
    assert (a.root / "roam" / "state.db").read_bytes() == content


def test_an_old_floor_file_keeps_protecting(tmp_path: Path) -> None:
    """A floor.json written by an earlier roam (keyed by location) still counts."""
    store = tmp_path / "store"
    a = _local(tmp_path, "a", store, new_key())
    old = _two_generations(a, store / "refs" / "HEAD")
    state = read_state(a.root)
    state["generation"] = 1  # as though the state were older than floor.json
    plant_legacy(a.root, state)
    (a.root / "roam" / "floor.json").write_text(json.dumps({state["identity"]: 2}))
    (store / "refs" / "HEAD").write_bytes(old)
    _refused(a.roam("status"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()


def test_git_file_url_and_plain_path_are_one_store(tmp_path: Path) -> None:
    from support.git_remotes import bare_repo, file_url

    repo = bare_repo(tmp_path)
    a = Device(tmp_path / "a", "a", {"backend": "git", "git_remote": file_url(repo)}, new_key())
    a.write("SOUL.md", "soul v1\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    branch = _git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/")
    old = _git(repo, "rev-parse", branch)
    a.write("SOUL.md", "soul v2\n")
    assert a.roam("push").code == 0
    text = (a.root / "config.yaml").read_text().replace(json.dumps(file_url(repo)),
                                                         json.dumps(str(repo)))
    (a.root / "config.yaml").write_text(text)
    _git(repo, "update-ref", branch, old)  # the provider serves the older commit again
    _refused(a.roam("pull", "--apply"))
    assert a.read("SOUL.md") == "soul v2\n"
