"""The push scan in one worker process beside the packing.

A scan in a thread of the push holds the interpreter lock in its big C passes
(`bytes.translate`, `int.from_bytes`, the multiply) and stalls the packer's threads, which
need it only for moments between their hashing, compression and sealing: on a quiet 2-core
machine that cost a large first push ~20 % of its wall time although the scan's processor
time is ~14 % of the push's and ~1.9 core-seconds sat idle (docs/benchmarks.md). So a large
push scans its plain files in ONE worker process (`python -m roam_core.secretscan.worker`, the
pool's protocol: scanner pickled on stdin, allowlisted environment), which shares the cores
with the packer but not its interpreter lock. It keeps its normal priority: at the lowest
one it fell behind the packer, which then waited for the verdict with its packs held
(decisions.md). It scans the files in order and reports them in small batches, so the
parent always knows what is done.

When the push can go no further without the verdict (its packer finished, or every sealing
thread waits at the gate), the parent scans the rest too, from the last file backwards,
until it meets the files the worker has reported; then the worker is stopped. A worker that
fails or dies leaves the rest to the parent at once. Every file is scanned whole by the same
scanner, once by one of the two, so the findings are the serial scan's (fail closed: never a
file unscanned).
"""

from __future__ import annotations

import contextlib
import contextvars
import pickle
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING

from roam_core.secretscan.pool import worker_env
from roam_core.secretscan.scan import Finding, Scanner

if TYPE_CHECKING:  # the worker process itself never starts one: its start-up stays small
    import subprocess

#: Below this much changed text the worker's start (a fresh interpreter, ~0.15 s of one core)
#: costs more than the scan in a thread beside the packing: it stays there.
WORKER_MIN_BYTES = 16 << 20
#: The worker reports after this many files or this many bytes scanned, whichever comes
#: first: few enough wake-ups of the parent, little scanned twice at the hand-over.
BATCH_FILES = 64
BATCH_BYTES = 1 << 20

Found = list[Finding] | None  # a file's findings; None: it vanished before the scan


class ScanCancelled(Exception):
    """The push gave up before the verdict: the scan stops, its worker too."""


class Handover:
    """The push's word to its scan: hurry (the rest is the parent's), or stop."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        #: why the parent took over ("packed", "stalled"), None while the worker scans alone
        self.reason: str | None = None
        self.cancelled = False

    def hurry(self, reason: str) -> None:
        """The push waits for the verdict: the parent scans what the worker has not."""
        with self.cond:
            if self.reason is None:
                self.reason = reason
            self.cond.notify_all()

    def cancel(self) -> None:
        """The push failed: nothing more to scan."""
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()


def _spawn() -> subprocess.Popen[bytes]:
    """A fresh worker: it imports the scanner, then waits for its work on stdin."""
    import subprocess

    return subprocess.Popen([sys.executable, "-m", "roam_core.secretscan.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=worker_env())


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a worker that was never given work (or whose work is done)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


#: Workers started before the push knew its files (`start_early`), for its scan to take.
_EARLY: contextvars.ContextVar[list[subprocess.Popen[bytes]] | None] = contextvars.ContextVar(
    "roam_scan_worker_early", default=None)


@contextlib.contextmanager
def early_workers() -> Iterator[None]:
    """A push's scope for `start_early`: a worker it started and the scan never took ends here.

    A push that ends without its scan taking the worker (nothing changed after all, a
    finding, an error) kills it on the way out. Nothing secret reaches a worker before its
    work does (pickled on its stdin by `WorkerScan`).
    """
    held: list[subprocess.Popen[bytes]] = []
    token = _EARLY.set(held)
    try:
        yield
    finally:
        _EARLY.reset(token)
        while held:
            try:
                proc = held.pop()
            except IndexError:  # the scan's thread took it meanwhile
                break
            _end(proc)


def start_early() -> None:
    """Start the scan's worker now, before the push has compared its files.

    A large first push scans beside the packing, and the packer stalls at the gate until
    the scan's verdict, so the worker's start (a fresh interpreter importing the scanner:
    ~0.07 s of processor time, more of wall time) delays every pack. Started once the walk
    has shown a large first push, it imports while the push reads its stat cache, the
    reference and the session archive; `WorkerScan` takes it. Outside `early_workers`, or
    with one already started, this does nothing.
    """
    held = _EARLY.get()
    if held is None or held:
        return
    try:
        held.append(_spawn())
    except OSError:
        pass  # the scan starts its own (or scans in the push's thread)


class WorkerScan:
    """The scan of `files` ((rel, location, size)) by one worker and, at the end, us."""

    def __init__(self, scanner: Scanner, files: Sequence[tuple[str, str, int]],
                 handover: Handover) -> None:
        self.scanner = scanner
        # as given: a push's view makes each tuple when read, holding no string per file
        self.files = files
        self.handover = handover
        #: the worker's findings, in file order (its frontier is their count)
        self.reported: list[Found] = []
        #: the files the parent scanned itself (index → findings)
        self.own: dict[int, Found] = {}
        self.worker_ended = False
        self.proc: subprocess.Popen[bytes] | None = None

    def run(self) -> dict[str, Found]:
        """Findings by path (None: vanished) of every file.

        Raises:
            ScanCancelled: when the push gave up first.
            OSError: a file the parent could not read (as the serial scan would).
        """
        cond = self.handover.cond
        reader = None
        try:
            self.proc = self._start()
            reader = threading.Thread(target=self._talk, name="roam-scan-worker", daemon=True)
            reader.start()
        except OSError:
            self.worker_ended = True  # no worker: the parent scans everything
        try:
            with cond:
                cond.wait_for(lambda: self.worker_ended or self.handover.cancelled
                              or self.handover.reason is not None
                              or len(self.reported) == len(self.files))
            self._finish()
        finally:
            self._stop(reader)
        count = len(self.reported)
        return {rel: self.reported[index] if index < count else self.own[index]
                for index, (rel, _location, _size) in enumerate(self.files)}

    def _start(self) -> subprocess.Popen[bytes]:
        held = _EARLY.get()
        proc = held.pop() if held else _spawn()  # `pop`: atomic, taken once
        self._started(proc)
        return proc

    def _started(self, proc: subprocess.Popen[bytes]) -> None:
        """Called once the worker runs (tests hold or kill it here)."""

    def _talk(self) -> None:
        """The reader thread: hand the worker its work, then collect its reports."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            try:
                payload = (self.scanner.literals, self.scanner.extra, self.scanner.allowed,
                           [(rel, location, size) for rel, location, size in self.files],
                           BATCH_FILES, BATCH_BYTES)
                pickle.dump(payload, proc.stdin)
                proc.stdin.close()
            except OSError:
                return  # the worker is gone (or was stopped): the parent scans the rest
            while True:
                batch = pickle.load(proc.stdout)  # our own child's answer
                with self.handover.cond:
                    self.reported.extend(batch[:len(self.files) - len(self.reported)])
                    self.handover.cond.notify_all()
                self._received(len(self.reported))
        except Exception:
            pass
        finally:
            with self.handover.cond:
                self.worker_ended = True
                self.handover.cond.notify_all()

    def _received(self, count: int) -> None:
        """Called after each of the worker's reports (tests kill the worker here)."""

    def _finish(self) -> None:
        """Scan, from the last file backwards, every file the worker has not reported."""
        cond = self.handover.cond
        index = len(self.files) - 1
        while True:
            with cond:
                if self.handover.cancelled:
                    raise ScanCancelled("the push gave up before the scan's verdict")
                if index < len(self.reported):
                    return  # met the worker: every file before is reported
            rel, location, _size = self.files[index]
            try:
                self.own[index] = self.scanner.scan_file(rel, location)
            except FileNotFoundError:
                self.own[index] = None
            index -= 1

    def _stop(self, reader: threading.Thread | None) -> None:
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                proc.kill()  # what it still scans is done (or never needed)
            proc.wait()
        if reader is not None:
            reader.join()
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()


def _worker(source: IO[bytes], sink: IO[bytes]) -> None:
    """Scan the files read from `source` in order, reporting each batch's findings on `sink`."""
    try:
        literals, extra, allowed, files, batch_files, batch_bytes = pickle.load(source)
    except EOFError:
        return  # started early, then not needed: the push closed our stdin
    scanner = Scanner(literals, extra, allowed)
    batch: list[Found] = []
    scanned = 0
    for rel, location, size in files:
        try:
            batch.append(scanner.scan_file(rel, location))
        except FileNotFoundError:
            batch.append(None)
        scanned += size
        if len(batch) >= batch_files or scanned >= batch_bytes:
            pickle.dump(batch, sink)
            sink.flush()
            batch, scanned = [], 0
    if batch:
        pickle.dump(batch, sink)
        sink.flush()


if __name__ == "__main__":
    _worker(sys.stdin.buffer, sys.stdout.buffer)
