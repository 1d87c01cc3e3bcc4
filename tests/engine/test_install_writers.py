"""Issue 22: an install creates its folders and temp files in a writer process.

Creating 20,000 files was most of a pull's install thread, and writer threads waited for the
interpreter lock after every call; a child process (`roam_core.engine.writers.WriterProcess`)
creates them beside the install on the other core. These tests watch that the installing
process creates none of a real pull's files itself, that a failure in the child (or its
death) rolls the whole install back with one line, and that the child dies with its parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
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


def _made_here(monkeypatch: pytest.MonkeyPatch, home: Path) -> list[str]:
    """Every file and folder this process creates in `home` (outside roam/)."""
    made: list[str] = []
    real_open, real_mkdir = os.open, os.mkdir

    def mine(path: Any) -> bool:
        rel = os.path.relpath(path, home)
        return not rel.startswith("..") and rel.split(os.sep)[0] != "roam"

    def opener(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & CREATE == CREATE and mine(path):
            made.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if mine(path):
            made.append(str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", opener)
    monkeypatch.setattr(os, "mkdir", mkdir)
    return made


def _rolled_back(b: Device, result: Any, before: dict[str, bytes], says: str) -> None:
    assert result.code == 1, result.err
    assert "rolled back" in result.err and says in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "Traceback" not in result.err
    assert b.snapshot_bytes() == before
    leftovers = [p for p in b.root.rglob("*") if p.name.startswith(".roam-")]
    assert not leftovers, leftovers
    assert not (b.root / "roam" / "journal.json").exists()


def test_files_and_folders_are_created_by_the_writer_process(
        make_device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _pushed(make_device, 200, big=writers.SMALL_FILE * 3 + 1)
    made = _made_here(monkeypatch, b.root)
    started: list[int] = []
    real_init = writers.WriterProcess.__init__

    def counted(self: writers.WriterProcess) -> None:
        real_init(self)
        started.append(self._child.pid)

    monkeypatch.setattr(writers.WriterProcess, "__init__", counted)
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    assert len(started) == 1
    assert b.snapshot_bytes().keys() >= {"skills/big.bin", "skills/s0/ref0.md"}
    for rel in ("skills/big.bin", "skills/s1/ref199.md"):
        assert (b.root / rel).read_bytes() == (a.root / rel).read_bytes()
    assert (b.root / "skills/big.bin").stat().st_size == writers.SMALL_FILE * 3 + 1
    # every temp file and staged folder, the large file streamed too, came from the child
    assert made == [], made


def _nth_add(monkeypatch: pytest.MonkeyPatch, number: int,
             change: Any) -> list[writers.WriterProcess]:
    """Apply `change(writer, args)` to the `number`th file queued to the writer process."""
    seen: list[writers.WriterProcess] = []
    real_add = writers.WriterProcess.add

    def add(self: writers.WriterProcess, *args: Any) -> None:
        seen.append(self)
        if len(seen) == number:
            args = change(self, args)
        real_add(self, *args)

    monkeypatch.setattr(writers.WriterProcess, "add", add)
    return seen


def test_a_write_failing_in_the_writer_process_rolls_the_install_back(
        make_device: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _a, b = _pushed(make_device, 150)
    before = b.snapshot_bytes()
    # the 40th file goes to a folder that does not exist: the child's open fails there
    nowhere = tmp_path / "no-such-folder" / "file"
    seen = _nth_add(monkeypatch, 40, lambda _writer, args: (str(nowhere), *args[1:]))
    result = b.roam("pull", "--apply")
    assert len(seen) >= 40, "no file was queued to the writer process"
    _rolled_back(b, result, before, f"No such file or directory: {nowhere}")


def test_the_writer_process_killed_mid_install_rolls_the_install_back(
        make_device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b = _pushed(make_device, 150)
    before = b.snapshot_bytes()

    def kill(writer: writers.WriterProcess, args: Any) -> Any:
        writer._child.kill()
        writer._child.wait()
        return args

    seen = _nth_add(monkeypatch, 20, kill)
    result = b.roam("pull", "--apply")
    assert len(seen) >= 20
    _rolled_back(b, result, before, "writer process ended unexpectedly")


def test_the_writer_process_dies_with_its_parent(tmp_path: Path) -> None:
    # a parent killed mid-install: the child must not go on creating files in a home the
    # next command's recovery is cleaning, even while its pipe is still open (here held by a
    # `sleep` the parent started; in a real install, the frames still queued in it)
    script = ("import subprocess, time; from roam_core.engine.writers import WriterProcess; "
              "w = WriterProcess(); subprocess.Popen(['sleep', '30'], pass_fds=[w._pipe], "
              "stdout=subprocess.DEVNULL); print(w._child.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        os.kill(child, 0)  # alive
        parent.kill()
        parent.wait()
        for _attempt in range(100):
            try:
                with open(f"/proc/{child}/stat") as stat:
                    if stat.read().rpartition(")")[2].split()[0] == "Z":
                        return  # killed, not reaped yet
            except FileNotFoundError:
                return  # killed and reaped
            time.sleep(0.05)
        pytest.fail(f"the writer process {child} outlived its parent")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)


def test_without_a_writer_process_the_install_writes_in_its_own_thread(
        make_device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _pushed(make_device, 30)

    def no_interpreter(self: writers.WriterProcess) -> None:
        raise FileNotFoundError(2, "No such file or directory", "python")

    monkeypatch.setattr(writers.WriterProcess, "__init__", no_interpreter)
    made = _made_here(monkeypatch, b.root)
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    rel = "skills/s3/ref3.md"
    assert (b.root / rel).read_bytes() == (a.root / rel).read_bytes()
    assert len([path for path in made if "ref" in path]) == 30


def test_store_reads_start_before_the_journal_is_written(
        make_device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_core.engine import journal

    _a, b = _pushed(make_device, 30)
    order: list[str] = []
    real_init, real_journal = journal.Prefetch.__init__, journal.Install._journal

    def prefetch(self: Any, ops: Any) -> None:
        order.append("prefetch")
        real_init(self, ops)

    def write(self: Any, phase: str) -> None:
        order.append(f"journal {phase}")
        real_journal(self, phase)

    monkeypatch.setattr(journal.Prefetch, "__init__", prefetch)
    monkeypatch.setattr(journal.Install, "_journal", write)
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    assert order == ["prefetch", "journal staging", "journal installing"], order


def test_the_writer_process_writes_large_files_where_libc_has_no_writeback_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS's C library has no sync_file_range: a file big enough for early writeback must
    # still be written (it is a refinement, as `roam_core.fs.start_writeback` treats it)
    import io
    import types

    from roam_core.engine import write_child

    monkeypatch.setattr(write_child, "_libc", lambda: types.SimpleNamespace())
    target = tmp_path / "large"
    data = os.urandom(write_child.WRITEBACK_MIN + 1)
    path = os.fsencode(str(target))
    frame = write_child.FRAME.pack(b"F", 0o644, write_child.KEEP_MODE, len(path), len(data))
    write_child.serve(io.BytesIO(frame + path + data), -1)
    assert target.read_bytes() == data
