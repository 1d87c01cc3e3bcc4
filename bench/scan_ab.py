"""The push scan's cost on the benchmark's large first push, in alternating A/B runs.

    python bench/scan_ab.py [--work DIR] [--runs N] [--modes worker,off,thread]

Each round runs a first `roam push --json` of the `large` home (bench/homes.py) to an empty
local store once per mode, the order rotating each round:

- `worker`: the push as shipped (a large push scans in one worker process);
- `thread`: the same code with the worker switched off (the scan in a thread of the push,
  as before the worker);
- `lowest`: the worker at the lowest priority (`SCHED_IDLE`; with `--realtime`, just below
  the push);
- `off`: `scan_outgoing` replaced by "no findings" (no scan at all);
- `stdlib`: as shipped, but as where google-re2 cannot be imported (the push and its
  worker find runs with the standard library's passes, regions.int_runs);
- any NAME given as `--code NAME=DIR`: as shipped, but with `roam_core` imported from DIR
  (e.g. `git archive COMMIT roam_core/src | tar -x -C /tmp/old`, then
  `--code old=/tmp/old/roam_core/src --modes old,worker,off`): an A/B of two commits.

`--realtime` (root, Linux) runs each push at real-time priority (`SCHED_RR` 2, a `lowest`
worker at 1): the push then owns the cores as on a quiet machine, whatever else runs on a
shared one; other processes get what the push leaves (and the kernel's 5 % reserve).

Prints each run's wall time, processor time (the push process and its children: user +
system, far less noisy than wall time on a shared machine), the time the push waited for
the verdict after packing, the time its packing stood still at the gate for the verdict
(`secret_scan_stall_seconds`), and the load average; then the medians and each mode's cost
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
mode, realtime = sys.argv[1], os.environ.pop("SCAN_AB_REALTIME", "")
if mode == "stdlib":
    sys.modules["re2"] = None
import roam_core.engine.push as push
import roam_core.secretscan.worker as worker
if realtime:  # the push above every other process (a quiet machine on a shared one)
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(2))
if mode == "off":
    push.scan_outgoing = lambda *a, **k: []
elif mode == "thread":
    worker.WORKER_MIN_BYTES = 1 << 62
elif mode == "lowest":
    started = worker.WorkerScan._started
    def lowest(self, proc):
        if realtime:  # just below the push, above everything else
            os.sched_setscheduler(proc.pid, os.SCHED_RR, os.sched_param(1))
        else:
            os.sched_setscheduler(proc.pid, os.SCHED_IDLE, os.sched_param(0))
        started(self, proc)
    worker.WorkerScan._started = lowest
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
    parser.add_argument("--modes", default="worker,off,thread")
    parser.add_argument("--realtime", action="store_true")
    parser.add_argument("--code", action="append", default=[],
                        help="NAME=DIR: mode NAME imports roam_core from DIR")
    args = parser.parse_args()
    modes = args.modes.split(",")
    code = dict(item.split("=", 1) for item in args.code)
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-scan-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    store, home = work / "store", work / "home"
    if not home.exists():
        generate(SPECS["large"], home, {"backend": "local", "local_dir": str(store)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = os.urandom(32).hex()
    if args.realtime:
        env["SCAN_AB_REALTIME"] = "1"
    # the scan worker is a fresh interpreter: a `sitecustomize` on its path blocks re2 there
    blocker = work / "no-re2"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['re2'] = None\n")
    runs: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
    for round_ in range(args.runs):
        for mode in modes[round_ % len(modes):] + modes[:round_ % len(modes)]:
            shutil.rmtree(store, ignore_errors=True)
            store.mkdir()
            shutil.rmtree(home / "roam", ignore_errors=True)
            roam = [sys.executable, "-c", WRAP, mode, "--home", str(home)]
            env.pop("PYTHONPATH", None)
            if mode == "stdlib":
                env["PYTHONPATH"] = str(blocker)
            elif mode in code:  # the scan worker inherits it (its environment's allowlist)
                env["PYTHONPATH"] = code[mode]
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
            stalled = float(report.get("secret_scan_stall_seconds", 0.0))
            runs[mode].append((wall, cpu, waited))
            print(f"{mode:7} wall {wall:6.2f} s  cpu {cpu:6.2f} s  waited {waited:5.2f} s  "
                  f"stalled {stalled:5.2f} s  "
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
