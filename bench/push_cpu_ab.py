"""A first push's processor time and peak RSS, checkouts alternating (issue 22).

    python3 -m uv run --all-packages python bench/push_cpu_ab.py HOME CHECKOUT[,CHECKOUT...] RUNS

HOME is a home made by bench/scale.py or bench/push_profile.py (a local store). For each run
each checkout (a roam checkout with its own .venv) pushes HOME afresh (store and `roam/`
removed, `init --create-remote`), the order alternating. Prints per push the user + system
time of the CLI and its scan worker (`RUSAGE_CHILDREN`: on a loaded machine a fairer measure
than wall time), its own peak RSS and its wall time, then each checkout's medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
from pathlib import Path

from push_timeline import _store

from roam_core.testing.rss import run_measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("checkouts", help="comma-separated roam checkouts (each with .venv)")
    parser.add_argument("runs", type=int)
    args = parser.parse_args()
    home = args.home.resolve()
    store = _store(home)
    checkouts = [Path(c).resolve() for c in args.checkouts.split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = "ab" * 32
    results: dict[Path, list[tuple[float, float, float]]] = {c: [] for c in checkouts}
    for run in range(args.runs):
        for checkout in checkouts if run % 2 == 0 else list(reversed(checkouts)):
            roam = [str(checkout / ".venv" / "bin" / "python"), "-m", "roam_core.cli.main",
                    "--home", str(home)]
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(home / "roam", ignore_errors=True)
            subprocess.run([*roam, "init", "--create-remote"], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            measured = run_measured([*roam, "push", "--quiet"], env=env,
                                    stdout=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            results[checkout].append((cpu, measured.peak_mib, measured.wall))
            print(f"{checkout}: processor {cpu:.1f} s, peak RSS {measured.peak_mib:.0f} MiB, "
                  f"wall {measured.wall:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    for checkout, rows in results.items():
        print(f"{checkout}: median processor {statistics.median(r[0] for r in rows):.1f} s, "
              f"peak RSS {max(r[1] for r in rows):.0f} MiB, "
              f"median wall {statistics.median(r[2] for r in rows):.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
