"""The push scan's cost on the benchmark's large first push, in alternating A/B runs.

    python bench/scan_ab.py [--work DIR] [--runs N] [--modes idle,off,thread]

Each round runs a first `roam push --json` of the `large` home (bench/homes.py) to an empty
local store once per mode, the order rotating each round:

- `idle`: the push as shipped (large pushes scan in one worker process, at the lowest
  priority unless the load average says every core is busy);
- `lowest` / `normal`: the worker at the lowest / normal priority whatever the load;
- `thread`: the same code with the worker switched off (the scan in a thread of the push,
  as before the worker);
- `nice`: the worker at `nice 19` instead of `SCHED_IDLE` whatever the load;
- `off`: `scan_outgoing` replaced by "no findings" (no scan at all).

Prints each run's wall time, processor time (the push process and its children: user +
system, far less noisy than wall time on a shared machine), the time the push waited for
the verdict after packing, and the load average; then the medians and each mode's cost
against `off`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homes import SPECS, generate

WRAP = """\
import os, sys
mode = sys.argv[1]
import roam_core.engine.push as push
import roam_core.secretscan.idle as idle
if mode == "off":
    push.scan_outgoing = lambda *a, **k: []
elif mode == "thread":
    idle.IDLE_MIN_BYTES = 1 << 62
elif mode == "normal":
    idle.saturated = lambda: True
elif mode == "lowest":
    idle.saturated = lambda: False
elif mode == "nice":
    idle.saturated = lambda: False
    idle.lower_priority = lambda pid=0: os.setpriority(os.PRIO_PROCESS, pid, 19)
from roam_core.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="idle,off,thread")
    args = parser.parse_args()
    modes = args.modes.split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-scan-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    store, home = work / "store", work / "home"
    if not home.exists():
        generate(SPECS["large"], home, {"backend": "local", "local_dir": str(store)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = os.urandom(32).hex()
    runs: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
    for round_ in range(args.runs):
        for mode in modes[round_ % len(modes):] + modes[:round_ % len(modes)]:
            shutil.rmtree(store, ignore_errors=True)
            store.mkdir()
            shutil.rmtree(home / "roam", ignore_errors=True)
            roam = [sys.executable, "-c", WRAP, mode, "--home", str(home)]
            subprocess.run([*roam, "init"], env=env, check=True, capture_output=True)
            cpu, started = _children_cpu(), time.perf_counter()
            done = subprocess.run([*roam, "push", "--json"], env=env, capture_output=True,
                                  text=True)
            wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            report = json.loads(done.stdout)
            waited = float(report.get("secret_scan_wait_seconds", 0.0))
            runs[mode].append((wall, cpu, waited))
            print(f"{mode:7} wall {wall:6.2f} s  cpu {cpu:6.2f} s  waited {waited:5.2f} s  "
                  f"worker {report.get('secret_scan_worker_files', 0)} files, hand-over "
                  f"{report.get('secret_scan_handover')}  load {os.getloadavg()[0]:.1f}",
                  flush=True)
    medians = {mode: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
               for mode, rows in runs.items()}
    for mode, (wall, cpu) in medians.items():
        line = f"{mode:7} median wall {wall:.2f} s, cpu {cpu:.2f} s"
        if "off" in medians and mode != "off":
            off_wall, off_cpu = medians["off"]
            line += (f"; cost {100 * (wall - off_wall) / wall:.1f} % of the wall, "
                     f"{100 * (cpu - off_cpu) / cpu:.1f} % of the cpu")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
