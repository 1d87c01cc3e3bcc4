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
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

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


#: A first push's scan fed while its walk finds the files (`WalkFeed`), for its scan to take.
_FED: contextvars.ContextVar[list[WalkFeed] | None] = contextvars.ContextVar(
    "roam_scan_worker_fed", default=None)


@contextlib.contextmanager
def early_workers() -> Iterator[None]:
    """A push's scope for `feed_walk`: a feed (and worker) the scan never took ends here.

    A push that ends without its scan taking the feed (nothing changed after all, an
    error after the walk) stops its thread and kills its worker on the way out. Nothing
    secret reaches a worker before its work does (pickled on its stdin).
    """
    fed: list[WalkFeed] = []
    token = _FED.set(fed)
    try:
        yield
    finally:
        _FED.reset(token)
        while fed:
            try:
                feed = fed.pop()
            except IndexError:  # the push's scan took it meanwhile
                break
            feed.close()


class FedFiles(Sequence[tuple[str, str, int]]):
    """(path, location, size) of the files a walk found so far, held as columns.

    Appended to by the walk's thread while the feed's thread reads what came before.
    """

    def __init__(self) -> None:
        self.rels: list[str] = []
        self._sizes = array("q")
        self._home: str | None = None
        self._elsewhere: dict[int, str] = {}  # index → location, for a file not below home

    def add(self, items: Iterable[Any]) -> int:
        """Add the plain files of `items` (`LocalFile`s of one folder); their bytes."""
        plain = [item for item in items if not item.is_config]
        if not plain:
            return 0
        if self._home is None and plain[0].where.endswith("/"):
            self._home = plain[0].where
        home, first = self._home, len(self.rels)
        for at, item in enumerate(plain):
            if item.where is not home and item.where != home:
                self._elsewhere[first + at] = item.location
        sizes = [item.size for item in plain]
        self._sizes.extend(sizes)
        self.rels.extend([item.rel for item in plain])  # last: who sees a path sees the rest
        return sum(sizes)

    def columns(self, start: int, end: int) -> tuple[object, ...]:
        """Files `start` to `end` as the worker reads them (`_fed`): columns, not records."""
        return (self._home, self.rels[start:end], self._sizes[start:end].tobytes(),
                {at - start: where for at, where in self._elsewhere.items()
                 if start <= at < end} if self._elsewhere else {})

    def __len__(self) -> int:
        return len(self.rels)

    def __getitem__(self, index: Any) -> Any:  # (path, location, size); a list for a slice
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        rel = self.rels[index]
        return rel, self._elsewhere.get(index) or f"{self._home}{rel}", self._sizes[index]


class WalkFeed:
    """A first push's scan, fed the walk's files while the walk goes on.

    A first push sends every file its walk finds, so its scan need not wait for the walk,
    the stat cache, the reference and the comparing: while they keep one core busy, the
    other is idle. Once the walk has found `WORKER_MIN_BYTES` of plain files, a thread of
    this feed builds the scanner, starts the worker and writes it each folder's files as
    they come (the worker scans them in that order); the push's scan takes the running
    `WorkerScan` (`take_fed`) and scans, as ever, any file it sends that the feed did not
    name (the session archive's). The push's scope (`early_workers`) stops a feed never
    taken; a feed that failed (the scanner could not be built, the worker not started) is
    not taken, and the push's scan starts afresh (fail closed).
    """

    def __init__(self, make_scanner: Callable[[], Scanner]) -> None:
        self._make_scanner = make_scanner
        self.files = FedFiles()
        self.handover = Handover()
        self.scan: WorkerScan | None = None
        self._bytes = 0
        self._sent = 0
        self._walked = False
        self._closed = False
        self._failed = False
        self._ready = threading.Event()
        self._more = threading.Condition()
        self._thread: threading.Thread | None = None

    def found(self, items: Iterable[Any]) -> None:
        """The walk found these files (`LocalFile`s; configs travel as projections: skipped)."""
        self._bytes += self.files.add(items)
        if self._thread is None:
            if self._bytes >= WORKER_MIN_BYTES:
                self._thread = threading.Thread(target=self._feed, name="roam-scan-feed",
                                                daemon=True)
                self._thread.start()
        else:
            with self._more:
                self._more.notify()

    def walked(self) -> None:
        """The walk is over: every file is named."""
        with self._more:
            self._walked = True
            self._more.notify()

    def _feed(self) -> None:
        try:
            scan = WorkerScan(self._make_scanner(), self.files, self.handover)
            scan.fed = True
            scan.begin()
            self.scan = scan
        except BaseException:
            self._failed = True
            return
        finally:
            self._ready.set()
        proc = scan.proc
        try:
            if proc is None or proc.stdin is None:
                raise OSError("no worker")
            pickle.dump(scan.header(None), proc.stdin)
            while True:
                with self._more:
                    self._more.wait_for(lambda: self._closed or self._walked
                                        or len(self.files) > self._sent)
                    if self._closed:
                        return
                    upto, last = len(self.files), self._walked
                pickle.dump(self.files.columns(self._sent, upto), proc.stdin)
                proc.stdin.flush()
                self._sent = upto
                if last and upto == len(self.files):
                    pickle.dump(None, proc.stdin)
                    proc.stdin.close()
                    return
        except (OSError, ValueError, pickle.PickleError):
            pass  # the worker is gone (or was stopped): its reports end, the push scans

    def take(self) -> WorkerScan | None:
        """The running scan of every file fed, or None (not started, or failed: stopped)."""
        if self._thread is None:
            return None
        self._ready.wait()
        if self._failed or self.scan is None:
            self.close()
            return None
        return self.scan

    def close(self) -> None:
        """Stop the feed and its worker (a push that never took it, or gave up)."""
        with self._more:
            self._closed = True
            self._more.notify()
        if self._thread is not None:
            self._ready.wait()
            if self.scan is not None:
                self.scan.close()
            self._thread.join()


def feed_walk(make_scanner: Callable[[], Scanner]) -> WalkFeed | None:
    """A `WalkFeed` for this push's scan (None outside `early_workers`, or fed already)."""
    fed = _FED.get()
    if fed is None or fed:
        return None
    feed = WalkFeed(make_scanner)
    fed.append(feed)
    return feed


def take_fed() -> WorkerScan | None:
    """The scan a `WalkFeed` of this push started, if any (see `WalkFeed.take`)."""
    fed = _FED.get()
    try:
        feed = fed.pop() if fed else None
    except IndexError:
        feed = None
    return feed.take() if feed is not None else None


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
        #: a `WalkFeed` writes the worker its files (else `_talk` writes them all at once)
        self.fed = False
        self._reader: threading.Thread | None = None
        self._begun = False

    def header(self, files: list[tuple[str, str, int]] | None) -> tuple[object, ...]:
        """The worker's work: the scanner's parts, `files` (None: they follow, `WalkFeed`)."""
        return (self.scanner.literals, self.scanner.extra, self.scanner.allowed, files,
                BATCH_FILES, BATCH_BYTES)

    def begin(self) -> None:
        """Start the worker on the files (`run` does, unless this was called before)."""
        if self._begun:
            return
        self._begun = True
        try:
            self.proc = self._start()
            self._reader = threading.Thread(target=self._talk, name="roam-scan-worker",
                                            daemon=True)
            self._reader.start()
        except OSError:
            self.worker_ended = True  # no worker: the parent scans everything

    def close(self) -> None:
        """Stop a scan that will not be run (its worker killed, its reader joined)."""
        self.handover.cancel()
        self._stop(self._reader)

    def run(self) -> dict[str, Found]:
        """Findings by path (None: vanished) of every file.

        Raises:
            ScanCancelled: when the push gave up first.
            OSError: a file the parent could not read (as the serial scan would).
        """
        cond = self.handover.cond
        self.begin()
        reader = self._reader
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
        proc = _spawn()
        self._started(proc)
        return proc

    def _started(self, proc: subprocess.Popen[bytes]) -> None:
        """Called once the worker runs (tests hold or kill it here)."""

    def _talk(self) -> None:
        """The reader thread: hand the worker its work, then collect its reports."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            if not self.fed:
                try:
                    pickle.dump(self.header(list(self.files)), proc.stdin)
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
        return  # not needed after all: the push closed our stdin
    scanner = Scanner(literals, extra, allowed)
    batch: list[Found] = []
    scanned = 0
    for rel, location, size in files if files is not None else _fed(source):
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


def _fed(source: IO[bytes]) -> Iterator[tuple[str, str, int]]:
    """The files a `WalkFeed` writes (`FedFiles.columns`), folder by folder, until its None."""
    while (columns := pickle.load(source)) is not None:
        home, rels, sizes, elsewhere = columns
        for at, (rel, size) in enumerate(zip(rels, array("q", sizes), strict=True)):
            yield rel, elsewhere.get(at) or f"{home}{rel}", size


if __name__ == "__main__":
    _worker(sys.stdin.buffer, sys.stdout.buffer)
