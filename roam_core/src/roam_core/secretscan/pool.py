"""The push scan of many files in a process pool.

One process reads text at a few tens of MB/s; a first push of a large home holds hundreds
of MB of changed text, so on a machine with more than one core the files are scanned by a
pool of worker processes. The workers are started with `forkserver` (or `spawn`), never
`fork`: the push may have threads running, and a forked copy of a locked lock deadlocks.
They import only `roam_core.secretscan`. The scanner, with this machine's literal secrets,
reaches them as the pool initializer's argument, which multiprocessing pickles over a pipe:
never written to disk, never in a worker's argv or environment.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from roam_core.secretscan.rules import Rule
from roam_core.secretscan.scan import Finding, Scanner

#: Below this much changed text the pool's start (a fresh interpreter per worker) costs more
#: than it saves.
POOL_MIN_BYTES = 32 << 20
#: Enough workers to fill the cores of an ordinary laptop; more only add start-up time.
MAX_WORKERS = 4

_scanner: Scanner | None = None  # the worker's scanner, set by `_start`


def usable_cores() -> int:
    """How many cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worth_a_pool(total_bytes: int) -> int:
    """The number of workers for `total_bytes` of files; 0 when one process is better."""
    cores = usable_cores()
    if total_bytes <= POOL_MIN_BYTES or cores < 2:
        return 0
    return min(cores, MAX_WORKERS)


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


def _start(literals: tuple[str, ...], extra: tuple[Rule, ...],
           allowed: frozenset[str]) -> None:
    """Pool initializer: build the parent's scanner from what came over the pool's pipe.

    The built-in rules hold functions, which do not pickle; the worker has them by import.
    """
    global _scanner
    _scanner = Scanner(literals, extra, allowed)


def _scan_share(share: list[tuple[str, str]]) -> list[tuple[str, list[Finding] | None]]:
    """Findings of every file of one share; None for a file that vanished."""
    assert _scanner is not None
    out: list[tuple[str, list[Finding] | None]] = []
    for rel, location in share:
        try:
            with open(location, "rb") as handle:
                out.append((rel, _scanner.scan_stream(rel, handle)))
        except FileNotFoundError:
            out.append((rel, None))
    return out


def scan_in_pool(scanner: Scanner, files: Sequence[tuple[str, str, int]],
                 workers: int) -> dict[str, list[Finding] | None]:
    """Findings by path (None: vanished) of `files` ((rel, location, size)), by `workers`.

    The result is the serial scan's: each file is scanned whole by one worker with the same
    scanner, and the caller reads the results in its own (path) order.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    results: dict[str, list[Finding] | None] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=context,
                             initializer=_start,
                             initargs=(scanner.literals, scanner.extra, scanner.allowed)) as pool:
        for done in pool.map(_scan_share, shares(files, workers)):
            results.update(done)
    return results
