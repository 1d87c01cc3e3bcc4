"""ENOSPC, EIO and EACCES at each write, sync, rename and unlink of an install.

A one-shot fault is injected at the n-th file-system call made while `Install.run` runs, for
every n until the install gets through untouched. A fault before the commit point (the state
naming the install committed, `statedb.commit`, itself one of the calls failed) must roll the
whole install back: exit 1, one line naming the error, the home and the state identical, no
journal and no temp file left. A fault after it leaves the install complete and the next
command finishes it (rolled forward), never a mix.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from campaign.harness import Home, Runner, Store, fast_dir, new_key

from roam_core.engine import journal, statedb
from support.state_files import read_state

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT


class Faults:
    """Counts file-system calls made inside `Install.run`; fails the `armed`-th one."""

    def __init__(self, patch: pytest.MonkeyPatch, code: int) -> None:
        self.code = code
        self.armed: int | None = None
        self.count = 0
        self.fired: str | None = None
        self.inside = False
        self.committed = False
        self.calls: list[str] = []
        run = journal.Install.run

        def install(this: Any, *args: Any, **kwargs: Any) -> Any:
            self.inside, self.committed = True, False
            try:
                return run(this, *args, **kwargs)
            finally:
                self.inside = False

        patch.setattr(journal.Install, "run", install)
        for owner, name in ((os, "fsync"), (os, "replace"), (os, "rename"), (os, "chmod"),
                            (os, "fchmod"), (os, "write"), (os, "mkdir"), (os, "unlink"),
                            (os, "rmdir"), (shutil, "copy2"), (journal, "syncfs"),
                            (journal, "rename_noreplace"), (statedb, "commit")):
            patch.setattr(owner, name, self._wrap(name, getattr(owner, name)))
        real_open, real_fdopen = os.open, os.fdopen

        def opener(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if flags & WRITE_FLAGS:
                self.tick("open", path)
            return real_open(path, flags, *args, **kwargs)

        def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            handle = real_fdopen(fd, mode, *args, **kwargs)
            return _Writer(handle, self) if "w" in mode or "a" in mode else handle

        patch.setattr(os, "open", opener)
        patch.setattr(os, "fdopen", fdopen)

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.tick(name, args[0] if args else "")
            result = real(*args, **kwargs)
            if name == "commit":
                self.committed = self.inside  # the install's commit point: the state's commit
            return result
        return call

    def tick(self, name: str, path: Any) -> None:
        if not self.inside:
            return
        self.count += 1
        self.calls.append(f"{name} {path}")
        if self.count == self.armed:
            self.fired = f"{name} {path}" + (" (after commit)" if self.committed else "")
            raise OSError(self.code, os.strerror(self.code), str(path))

    def arm(self, number: int | None) -> None:
        self.armed, self.count, self.fired, self.calls = number, 0, None, []


class _Writer:
    """A file object whose writes and flushes are counted like the calls above."""

    def __init__(self, handle: Any, faults: Faults) -> None:
        self._handle = handle
        self._faults = faults

    def write(self, data: bytes) -> int:
        self._faults.tick("write", getattr(self._handle, "name", "?"))
        return int(self._handle.write(data))

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """On tmpfs where there is one: every install syncs the file system."""
    with fast_dir("roam-faults-") as path:
        yield path


@pytest.fixture
def homes(scratch: Path) -> Iterator[tuple[Home, Home]]:
    tmp_path = scratch
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    store = Store("local", {"backend": "local", "local_dir": str(store_dir)}, key=new_key())
    runner = Runner()
    a = Home(tmp_path / "a", "a", store, runner, backup_keep=1000)
    b = Home(tmp_path / "b", "b", store, runner, backup_keep=1000)
    a.write("SOUL.md", "soul 0\n")
    a.write("memories/MEMORY.md", "first")
    a.write("skills/gone-0/SKILL.md", "to be deleted\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    yield a, b


def _publish(a: Home, n: int) -> None:
    """A change of every kind: replace, merge-free edit, create in a new folder, delete."""
    a.write("SOUL.md", f"soul {n}\n")
    a.write("memories/MEMORY.md", f"first\n§\nround {n}")
    a.write(f"skills/new-{n}/SKILL.md", f"new in round {n}\n")
    a.write(f"skills/gone-{n}/SKILL.md", "to be deleted next round\n")
    (a.root / f"skills/gone-{n - 1}/SKILL.md").unlink()
    assert a.roam("push").code == 0


def _state(b: Home) -> dict[str, Any]:
    return read_state(b.root)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EACCES],
                         ids=["ENOSPC", "EIO", "EACCES"])
def test_fault_at_each_install_call_rolls_back_or_forward(
        homes: tuple[Home, Home], code: int, scratch: Path) -> None:
    a, b = homes
    with pytest.MonkeyPatch.context() as patch:
        faults = Faults(patch, code)
        rounds, number, seen = 1, 0, 0
        _publish(a, rounds)
        before = after = None
        while True:
            number += 1
            if before is None:  # a new round: what the home holds before and after it
                before, state = b.files(), _state(b)
                control = b.copy(scratch / f"control-{rounds}")
                faults.arm(None)
                assert control.roam("pull", "--apply").code == 0
                after = control.files()
                shutil.rmtree(control.root)
            faults.arm(number)
            result = b.roam("pull", "--apply")
            if faults.fired is None:
                assert result.code == 0, result.err
                break  # every call of the install has had its fault
            seen += 1
            where = f"fault {number} at {faults.fired}"
            assert "Traceback" not in result.err, where
            assert not [p for p in b.root.rglob("*") if ".roam-tmp-" in p.name], where
            if result.code == 0:  # the call was not needed (e.g. mkdir of an existing folder)
                assert b.files() == after, where
            elif not faults.committed:
                assert result.code == 1, (where, result.out, result.err)
                line = result.err.strip().splitlines()[-1]
                assert line.startswith("roam: ") and os.strerror(code) in line, (where, line)
                assert b.files() == before, f"{where}: the home was not rolled back"
                assert _state(b) == state, where
                assert not (b.root / "roam" / "journal.json").exists(), (where, faults.calls)
                continue
            else:
                assert result.code == 1, (where, result.out, result.err)
                assert b.files() == after, f"{where}: a committed install must be complete"
                faults.arm(None)
                finished = b.roam("status")
                assert finished.code == 0, finished.err
                assert "recovered: finished" in finished.err, (where, finished.err)
                assert b.files() == after
            assert not (b.root / "roam" / "journal.json").exists(), where
            rounds += 1
            _publish(a, rounds)
            before = None
    assert seen >= 20, faults.calls  # the install made that many calls: each was failed once
