"""Issue 22: an install creates its small files on writer threads, its large ones in place.

Creating 20,000 files was most of a pull's install thread; writer threads spread that kernel
work over the cores (`roam_core.engine.writers`). These tests watch which thread creates
each temp file of a real pull, and that a write failing on a writer thread rolls the whole
install back with one line.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from fleet import Device
from roam_core.engine import writers

CREATE = os.O_CREAT | os.O_EXCL


def _pushed(make_device: Any, files: int, big: int = 0) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b")
    for index in range(files):
        a.write(f"skills/s{index % 9}/ref{index}.md", f"reference {index}\n" * 3)
    if big:
        a.write("skills/big.bin", os.urandom(big))
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    return a, b


def _creators(monkeypatch: pytest.MonkeyPatch, home: Path) -> dict[str, str]:
    """Each file the install creates in `home` → the name of the thread that created it."""
    made: dict[str, str] = {}
    real_open = os.open
    lock = threading.Lock()

    def opener(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & CREATE == CREATE and str(path).startswith(str(home)) \
                and "/roam/" not in str(path):
            with lock:
                made[str(path)] = threading.current_thread().name
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opener)
    return made


def test_small_files_are_created_on_writer_threads(make_device: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _pushed(make_device, 200, big=writers.SMALL_FILE + 1)
    made = _creators(monkeypatch, b.root)
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    assert b.snapshot_bytes().keys() >= {"skills/big.bin", "skills/s0/ref0.md"}
    for rel in ("skills/big.bin", "skills/s1/ref199.md"):
        assert (b.root / rel).read_bytes() == (a.root / rel).read_bytes()
    by_writer = [path for path, name in made.items() if name.startswith("roam-writer-")]
    in_place = [path for path, name in made.items() if not name.startswith("roam-writer-")]
    assert len(by_writer) >= 200, made
    # the one file over the hand-over size streams in the install's own thread
    assert len(in_place) == 1 and in_place[0].endswith("big.bin"), in_place


def test_a_write_failing_on_a_writer_thread_rolls_the_install_back(
        make_device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b = _pushed(make_device, 150)
    before = b.snapshot_bytes()
    real_write = os.write
    failed: list[str] = []

    def write(fd: int, data: Any) -> int:
        name = threading.current_thread().name
        if name.startswith("roam-writer-") and not failed:
            failed.append(name)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    result = b.roam("pull", "--apply")
    assert failed, "no file was written on a writer thread"
    assert result.code == 1
    assert "rolled back" in result.err and "No space left" in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "Traceback" not in result.err
    assert b.snapshot_bytes() == before
    leftovers = [p for p in b.root.rglob("*") if p.name.startswith(".roam-")]
    assert not leftovers, leftovers
    assert not (b.root / "roam" / "journal.json").exists()
