from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from roam_backend_local import LocalBackend
from roam_core.errors import ObjectExists, RefConflict
from roam_core.testing.contract import BackendContract


class TestLocalBackend(BackendContract):
    backend_name = "local"

    @pytest.fixture
    def backend_factory(self, tmp_path: Path):
        root = tmp_path / "store"
        root.mkdir()
        return lambda: LocalBackend(root)


def _race_swap(root: str, base: str, index: int, start: float, queue) -> None:
    import time

    while time.time() < start:
        time.sleep(0.001)
    try:
        LocalBackend(root).swap_ref("HEAD", f"proc-{index}".encode(), base)
        queue.put(("won", index))
    except RefConflict:
        queue.put(("lost", index))


def _race_put(root: str, index: int, start: float, queue) -> None:
    import time

    while time.time() < start:
        time.sleep(0.001)
    try:
        LocalBackend(root).put_new("data/raced", f"proc-{index}".encode())
        queue.put(("won", index))
    except ObjectExists:
        queue.put(("lost", index))


@pytest.mark.parametrize("target", ["swap", "put"])
def test_multi_process_race_has_exactly_one_winner(tmp_path: Path, target: str) -> None:
    import time

    root = tmp_path / "store"
    root.mkdir()
    base = LocalBackend(root).swap_ref("HEAD", b"base", None)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start = time.time() + 1.5
    count = 8
    if target == "swap":
        procs = [context.Process(target=_race_swap, args=(str(root), base, i, start, queue))
                 for i in range(count)]
    else:
        procs = [context.Process(target=_race_put, args=(str(root), i, start, queue))
                 for i in range(count)]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(30)
    winners = [index for outcome, index in results if outcome == "won"]
    assert len(winners) == 1, results
    backend = LocalBackend(root)
    if target == "swap":
        assert backend.read_ref("HEAD")[0] == f"proc-{winners[0]}".encode()
    else:
        assert backend.get("data/raced") == f"proc-{winners[0]}".encode()


def test_no_temp_files_are_left_or_listed(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    backend.put_new("data/a", b"1")
    with pytest.raises(ObjectExists):
        backend.put_new("data/a", b"2")
    leftovers = [name for _d, _s, files in os.walk(tmp_path) for name in files
                 if name.startswith(".tmp-")]
    assert leftovers == []
    assert list(backend.list()) == ["data/a"]


def test_identity_is_the_absolute_path(tmp_path: Path) -> None:
    assert LocalBackend(tmp_path).identity() == f"file://{tmp_path.absolute()}"


def test_names_are_synced_once_per_folder_and_before_any_ref_moves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object's bytes are synced before it is linked; its folder is synced by `flush`,
    which a ref swap runs before the ref changes, so HEAD never names a name a crash could
    lose. New fan-out folders are synced in their parents too."""
    import roam_backend_local.backend as module

    events: list[str] = []
    real_fsync_dir, real_replace = module.fsync_dir, os.replace
    monkeypatch.setattr(module, "fsync_dir",
                        lambda path: (events.append(f"sync {Path(path).name}"),
                                      real_fsync_dir(path))[1])
    monkeypatch.setattr(os, "replace",
                        lambda a, b: (events.append(f"replace {Path(b).name}"),
                                      real_replace(a, b))[1])
    root = tmp_path / "store"
    root.mkdir()
    backend = LocalBackend(root)
    for number in range(20):
        backend.put_new(f"trees/ab/{number:04d}", b"tree")
    backend.put_new("snapshots/s1", b"snap")
    assert events == []  # nothing synced per object
    backend.swap_ref("HEAD", b"gen-1", None)
    head = events.index("replace HEAD")
    synced = {event for event in events[:head] if event.startswith("sync ")}
    # each folder once: the objects' folders, and where new folders were made
    assert synced >= {"sync ab", "sync snapshots", "sync trees", "sync objects"}
    assert len(events[:head]) == len(synced)
    events.clear()
    backend.swap_ref("HEAD", b"gen-2", backend.read_ref("HEAD")[1])  # type: ignore[index]
    assert not [event for event in events if event.startswith("sync ab")]  # already durable


def test_a_folder_removed_behind_its_back_is_made_again(tmp_path: Path) -> None:
    """The backend remembers which fan-out folders it made; one removed meanwhile (a sync
    tool, a hand clean-up) is made again instead of failing the write."""
    import shutil

    root = tmp_path / "store"
    root.mkdir()
    backend = LocalBackend(root)
    backend.put_new("trees/ab/one", b"1")
    shutil.rmtree(root / "objects" / "trees" / "ab")
    backend.put_new("trees/ab/two", b"2")
    assert LocalBackend(root).get("trees/ab/two") == b"2"
    backend.swap_ref("HEAD", b"gen", None)  # its flush syncs what exists, quietly
