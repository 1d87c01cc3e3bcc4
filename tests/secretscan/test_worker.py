"""The worker process's scan finds exactly what the serial scan finds, whoever scans what.

The worker (roam_core/secretscan/worker.py) scans in file order and reports in batches; the
parent takes over from the last file backwards when the push waits for the verdict, or when
the worker dies. These tests fix who scans what with the worker's own hooks (held with
SIGSTOP, killed with SIGKILL, a FIFO it cannot read past), never with sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from roam_core.secretscan import worker
from roam_core.secretscan.worker import Handover, ScanCancelled, WorkerScan
from secretscan.test_pool import (
    LITERAL,
    SHORT_LITERAL,
    _argv_and_environment,
    _corpus,
    _descendants,
    _scanner,
)

pytestmark = pytest.mark.timeout(180)  # a broken hand-over hangs: fail, do not hold CI


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report per file: hand-overs happen mid-way."""
    monkeypatch.setattr(worker, "BATCH_FILES", 1)


def _serial(files: list[tuple[str, str, int]]) -> dict:
    scanner = _scanner()
    out = {}
    for rel, location, _size in files:
        try:
            out[rel] = scanner.scan_file(rel, location)
        except FileNotFoundError:
            out[rel] = None
    return out


def _files(tmp_path: Path) -> list[tuple[str, str, int]]:
    files = _corpus(tmp_path)
    files.insert(7, ("gone.md", str(tmp_path / "gone.md"), 5))  # vanished before the scan
    return files


def test_the_worker_alone_finds_what_the_serial_scan_finds(tmp_path: Path) -> None:
    files = _files(tmp_path)
    scan = WorkerScan(_scanner(), files, Handover())

    found = scan.run()

    assert found == _serial(files) and found["gone.md"] is None
    assert len(scan.reported) == len(files) and not scan.own  # no hand-over: all the worker's
    assert sum(len(f) for f in found.values() if f) > 50


def test_the_packer_finishing_first_leaves_every_file_to_the_parent(tmp_path: Path) -> None:
    files = _files(tmp_path)
    handover = Handover()

    class Held(WorkerScan):
        def _started(self, proc: subprocess.Popen[bytes]) -> None:
            os.kill(proc.pid, signal.SIGSTOP)  # the worker never gets a core
            handover.hurry("packed")

    scan = Held(_scanner(), files, handover)
    assert scan.run() == _serial(files)
    assert not scan.reported and len(scan.own) == len(files)
    assert scan.proc is not None and scan.proc.returncode == -signal.SIGKILL  # stopped


def _stop(pid: int) -> None:
    """SIGSTOP `pid` and return once it is stopped (it reads nothing more after that)."""
    os.kill(pid, signal.SIGSTOP)
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "tT":
        time.sleep(0.001)


def _held_at(tmp_path: Path, files: list, index: int) -> threading.Thread:
    """A FIFO at `index` of `files`: nobody reads past it until the returned thread runs.

    The thread writes two literal secrets into it (started once only the parent can read).
    """
    fifo = tmp_path / "held.md"
    os.mkfifo(fifo)
    files.insert(index, ("held.md", str(fifo), 1 << 20))
    content = f"value {LITERAL} and {SHORT_LITERAL}\n".encode()
    return threading.Thread(target=lambda: fifo.open("wb").write(content))


def test_a_hand_over_meets_the_worker_mid_way(tmp_path: Path) -> None:
    """The worker reports some files and is held before a FIFO: the parent scans the rest."""
    files = _files(tmp_path)
    writer = _held_at(tmp_path, files, 30)
    handover = Handover()

    class MidWay(WorkerScan):
        def _received(self, count: int) -> None:
            if count >= 5 and handover.reason is None:
                assert self.proc is not None
                _stop(self.proc.pid)  # it never reads the FIFO: the parent will
                writer.start()
                handover.hurry("stalled")

    scan = MidWay(_scanner(), files, handover)
    found = scan.run()
    writer.join()
    expected = _serial([f for f in files if f[0] != "held.md"])
    assert sorted(f.rule for f in found.pop("held.md")) == ["literal-secret"] * 2
    assert found == expected
    # the parent stopped where the worker's reports began; the two cover every file
    assert 5 <= len(scan.reported) <= 30 and min(scan.own) <= len(scan.reported)
    assert set(range(len(scan.reported))) | set(scan.own) == set(range(len(files)))


def test_a_worker_killed_mid_scan_leaves_the_rest_to_the_parent(tmp_path: Path) -> None:
    """Killed after its first report, held before a FIFO: the parent scans what is left."""
    files = _files(tmp_path)
    writer = _held_at(tmp_path, files, 20)

    class Killed(WorkerScan):
        def _received(self, count: int) -> None:
            assert self.proc is not None
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
                writer.start()  # only now: the parent is the FIFO's one reader

    scan = Killed(_scanner(), files, Handover())  # no hand-over: the death alone
    found = scan.run()
    writer.join()
    expected = _serial([f for f in files if f[0] != "held.md"])
    assert sorted(f.rule for f in found.pop("held.md")) == ["literal-secret"] * 2
    assert found == expected
    assert 0 < len(scan.reported) <= 20 and 20 in scan.own


def test_a_worker_that_cannot_start_leaves_everything_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files(tmp_path)
    monkeypatch.setattr("sys.executable", str(tmp_path / "no-python"))
    scan = WorkerScan(_scanner(), files, Handover())
    assert scan.run() == _serial(files) and len(scan.own) == len(files)


def test_a_cancelled_push_stops_the_scan_and_its_worker(tmp_path: Path) -> None:
    handover = Handover()

    class Cancelled(WorkerScan):
        def _started(self, proc: subprocess.Popen[bytes]) -> None:
            os.kill(proc.pid, signal.SIGSTOP)
            handover.cancel()

    scan = Cancelled(_scanner(), _files(tmp_path), handover)
    with pytest.raises(ScanCancelled):
        scan.run()
    assert scan.proc is not None and scan.proc.returncode == -signal.SIGKILL


def test_the_worker_holds_no_secret_in_argv_or_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", "ROAM_ARCHIVE_KEY")  # roam's own: not passed on
    fifo = tmp_path / "held.md"  # holds the worker in its read while we look at it
    os.mkfifo(fifo)
    scan = WorkerScan(_scanner(), [("held.md", str(fifo), 1 << 20)], Handover())
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(scan.run()))
    thread.start()
    with open(fifo, "wb") as writer:  # returns once the worker has opened the FIFO
        workers = _descendants(os.getpid())
        seen = _argv_and_environment(workers)
        assert scan.proc is not None and scan.proc.pid in workers
        writer.write(f"value {LITERAL} and {SHORT_LITERAL}\n".encode())
    thread.join()
    assert b"roam_core.secretscan.worker" in seen, "no worker seen: proves nothing"
    assert LITERAL.encode() not in seen and SHORT_LITERAL.encode() not in seen
    assert b"ROAM_ARCHIVE_KEY" not in seen
    # ...and yet the worker had the literals: it found both.
    assert sorted(f.rule for f in result["held.md"]) == ["literal-secret", "literal-secret"]
    assert len(scan.reported) == 1 and not scan.own


def test_a_walk_feed_is_the_scans_and_an_unused_one_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first push's walk feeds the worker folder by folder (`WalkFeed`); the scan takes it."""
    from roam_core.engine.scan import LocalFile

    monkeypatch.setattr(worker, "WORKER_MIN_BYTES", 1)
    files = _files(tmp_path)
    home = f"{tmp_path}/"
    # as the walk makes them: the home's folder shared, a full location for any other file
    walked = [LocalFile(rel, home if location == home + rel else location, size, 0o644,
                        [size, 0, 0, 0]) for rel, location, size in files]
    assert any(item.where == home for item in walked)
    config = LocalFile("config.yaml", home, 9, 0o644, [9, 0, 0, 0],
                       is_config=True)  # travels as a projection: not fed
    with worker.early_workers():
        feed = worker.feed_walk(_scanner)
        assert feed is not None and worker.feed_walk(_scanner) is None  # one a push
        for start in range(0, len(walked), 3):  # three files a folder
            feed.found([*walked[start:start + 3], config])
        feed.walked()
        scan = worker.take_fed()
        assert scan is not None and scan.fed and worker.take_fed() is None
        found = scan.run()
    assert found == _serial(files) and list(scan.files) == files
    assert len(scan.reported) + len(scan.own) == len(files)

    with worker.early_workers():  # a push that never scans: its feed's worker ends with it
        feed = worker.feed_walk(_scanner)
        assert feed is not None
        feed.found(walked)
        feed._ready.wait()
        unused = feed.scan
    assert unused is not None and unused.proc is not None
    assert unused.proc.returncode == -signal.SIGKILL and unused.proc.stdout.closed
    assert worker.feed_walk(_scanner) is None  # outside a push: nothing is fed

