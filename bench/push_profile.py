"""Where a push's memory goes: peak RSS and tracemalloc's top sites at the traced peak.

    python3 -m uv run --all-packages python bench/push_profile.py [--files N] [--top N]

Builds bench/scale.py's home (N shared files of 5 KiB mean, local backend), then for the
first push and for an incremental push of 10 changed files: the CLI's own peak RSS in a
process of its own (`roam_core.testing.rss`), and the same push run in-process under
`tracemalloc` (8 frames), a snapshot taken whenever the traced total reached a new high, its
top allocation sites printed grouped by traceback. Peak RSS is what the target bounds;
tracemalloc says which code holds the Python objects behind it (issue 22).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homes
from scale import CHANGED, MEAN, _settings, _touch
from tools import ARCHIVE_KEY, Roam, Trash, _clean_env, run_cli_here

from roam_core.testing.rss import run_measured


def peak_rss(home: Path, *args: str) -> float:
    """The CLI's own peak RSS (MiB) for one command on `home`."""
    env = {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY}
    measured = run_measured([sys.executable, "-m", "roam_core.cli.main", "--home", str(home),
                             *args], env=env, stdout=subprocess.DEVNULL)
    if measured.code != 0:
        raise SystemExit(f"roam {' '.join(args)} failed (exit {measured.code})")
    return measured.peak_mib


def traced(home: Path, top: int, *args: str) -> None:
    """Run the CLI in this process under tracemalloc; print the sites at the traced peak."""
    os.environ.update({"ROAM_ARCHIVE_KEY": ARCHIVE_KEY})
    best: list[object] = [None, 0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            current = tracemalloc.get_traced_memory()[0]
            if current > best[1] + (1 << 20):  # type: ignore[operator]
                best[0], best[1] = tracemalloc.take_snapshot(), current

    checkpoints: list[tuple[str, object, int]] = []

    def at(owner: object, name: str) -> None:
        # a snapshot as each phase begins: where the per-file records stand then, which the
        # traced high (often the packs in flight) hides on a small home
        original = getattr(owner, name)

        def wrapped(*a: object, **k: object) -> object:
            checkpoints.append((name, tracemalloc.take_snapshot(),
                                tracemalloc.get_traced_memory()[0]))
            return original(*a, **k)

        setattr(owner, name, wrapped)

    from roam_core.engine import push as push_module
    from roam_core.store.treepacks import TreePacker

    at(TreePacker, "finish")
    at(push_module, "save_state")
    tracemalloc.start(8)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run_cli_here("--home", str(home), *args)
    finally:
        done.set()
        watcher.join()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"  traced peak {peak / 2**20:.1f} MiB")
    for name, snapshot, size in [("traced high", best[0], best[1]), *checkpoints]:
        if snapshot is not None:
            print(f"  at {name}: {size / 2**20:.1f} MiB traced")  # type: ignore[operator]
            _top(snapshot, top)


def _top(snapshot: tracemalloc.Snapshot, top: int) -> None:
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    for stat in snapshot.statistics("traceback")[:top]:
        # innermost first (a traceback lists the oldest frame first)
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback)][:6]
        print(f"  {stat.size / 2**20:6.1f} MiB {stat.count:8d}  {' < '.join(frames)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench-pushmem"))
    parser.add_argument("--no-trace", action="store_true", help="peak RSS only")
    parser.add_argument("--no-rss", action="store_true", help="tracemalloc only")
    args = parser.parse_args()
    workdir = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    trash = Trash(workdir / "trash")
    spec = homes.HomeSpec(f"scale{args.files}", files=args.files,
                          shared_bytes=args.files * MEAN)
    home = homes.generate(spec, workdir / "homes" / spec.name, _settings(workdir, "bench-a"))
    edited = [rel for rel in homes.shared_paths(home)
              if rel.startswith("skills/")][::max(args.files // 400, 1)]
    roam = Roam(home)
    run = iter(range(1000))

    def fresh() -> None:
        trash.discard(workdir / "store")
        trash.discard(home / "roam")
        roam("init", "--create-remote")

    fresh()
    print(f"{args.files} files; load average {os.getloadavg()}")
    if not args.no_rss:
        print(f"first push: peak RSS {peak_rss(home, 'push', '--quiet'):.0f} MiB")
        _touch(home, edited, next(run))
        print(f"incremental push ({CHANGED} files): peak RSS "
              f"{peak_rss(home, 'push', '--quiet'):.0f} MiB")
    if not args.no_trace:
        fresh()
        print("first push, traced:")
        traced(home, args.top, "push", "--quiet")
        _touch(home, edited, next(run))
        print("incremental push, traced:")
        started = time.perf_counter()
        traced(home, args.top, "push", "--quiet")
        print(f"  ({time.perf_counter() - started:.0f} s traced)")
    trash.empty()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
