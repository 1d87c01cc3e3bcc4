"""The push scan of many files in a process pool.

One process reads text at a few tens of MB/s; a first push of a large home holds hundreds
of MB of changed text, so on a machine with more than one core the files are scanned by a
pool of worker processes: `python -m roam_core.secretscan.pool`, one per share of
the files. Not `multiprocessing`: its `fork` copies a push that may have threads running
(a copied locked lock deadlocks), and its `spawn`/`forkserver` re-import the parent's main
module in every worker (for a Hermes tool, Hermes itself). These workers import only
`roam_core.secretscan`. The scanner, with this machine's literal secrets, reaches them
pickled on their stdin: never written to disk, never in a worker's argv, and the workers'
environment is an allowlist with no `ROAM_*` variable and no other secret.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from roam_core.secretscan.scan import Finding, Scanner

#: Below this much changed text the pool's start (a fresh interpreter per worker) costs more
#: than it saves.
POOL_MIN_BYTES = 32 << 20
#: Enough workers to fill the cores of an ordinary laptop; more only add start-up time.
MAX_WORKERS = 4


def usable_cores() -> int:
    """How many cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def busy_cores() -> float:
    """The one-minute load average: how many cores other work keeps busy."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("inf")  # unknown: assume no core is free


def worth_a_pool(total_bytes: int) -> int:
    """The number of workers for `total_bytes` of files; 0 when one process is better.

    Workers only help on cores nothing else uses: on a 2-core machine at load 7-9 the pool
    made the scan slower (docs/benchmarks.md), so the pool gets the idle cores only, plus
    the one this process frees while it waits.
    """
    idle = int(usable_cores() - busy_cores())
    if total_bytes <= POOL_MIN_BYTES or idle < 1:
        return 0
    return min(usable_cores(), idle + 1, MAX_WORKERS)


def shares(files: Sequence[tuple[str, str, int]], count: int) -> list[list[tuple[str, str]]]:
    """`files` ((rel, location, size)) split into `count` shares of about equal size.

    Largest first, each to the lightest share so far: no share waits on one big file
    while the others are idle.
    """
    loads = [0] * count
    out: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for rel, location, size in sorted(files, key=lambda f: f[2], reverse=True):
        lightest = loads.index(min(loads))
        loads[lightest] += size
        out[lightest].append((rel, location))
    return [share for share in out if share]


def _scan_share(scanner: Scanner,
                share: list[tuple[str, str]]) -> list[tuple[str, list[Finding] | None]]:
    """Findings of every file of one share; None for a file that vanished."""
    out: list[tuple[str, list[Finding] | None]] = []
    for rel, location in share:
        try:
            out.append((rel, scanner.scan_file(rel, location)))
        except FileNotFoundError:
            out.append((rel, None))
    return out


def worker_env() -> dict[str, str]:
    """A worker's environment: an allowlist (what Python needs to find roam), no secret."""
    keep = ("PATH", "HOME", "LANG", "TZ", "TMPDIR", "PYTHONPATH", "PYTHONHOME")
    return {name: value for name, value in os.environ.items()
            if name in keep or name.startswith("LC_")}


def scan_in_pool(scanner: Scanner, files: Sequence[tuple[str, str, int]],
                 workers: int) -> dict[str, list[Finding] | None] | None:
    """Findings by path (None: vanished) of `files` ((rel, location, size)), by `workers`.

    Each worker is a fresh `python -m roam_core.secretscan.pool` (exec'd at once, so threads
    of the push do not matter) that imports only the scanner; its share and the scanner's
    literals, user patterns and allowed fingerprints reach it pickled on its stdin. Each file
    is scanned whole by one worker with the same scanner, so the findings are the serial
    scan's; the caller reads them in its own (path) order. None when a worker failed: the
    caller then scans serially (fail closed: never a push with a file unscanned).
    """
    import pickle
    import subprocess
    import sys

    procs = []
    try:
        for share in shares(files, workers):
            proc = subprocess.Popen([sys.executable, "-m", "roam_core.secretscan.pool"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=worker_env())
            procs.append(proc)
            # The worker reads all of its stdin before it writes: this never blocks for long.
            assert proc.stdin is not None
            pickle.dump((scanner.literals, scanner.extra, scanner.allowed, share), proc.stdin)
            proc.stdin.close()
        results: dict[str, list[Finding] | None] = {}
        for proc in procs:
            assert proc.stdout is not None
            out = proc.stdout.read()
            if proc.wait() != 0:
                return None
            results.update(pickle.loads(out))  # our own child's answer
        return results
    except (OSError, pickle.PickleError, EOFError):
        return None
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _worker() -> None:
    """A worker: read (literals, extra rules, allowed, share) on stdin, pickle the findings."""
    import pickle
    import sys

    literals, extra, allowed, share = pickle.load(sys.stdin.buffer)
    pickle.dump(_scan_share(Scanner(literals, extra, allowed), share), sys.stdout.buffer)


if __name__ == "__main__":
    _worker()
