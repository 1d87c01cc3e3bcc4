"""The push secret scanner's share of a first push (issue 26's "≤ 10% of push time").

    python bench/scan_cost.py [--home small|large] [--work DIR]

Generates the benchmark's synthetic home (bench/homes.py), runs `roam init` and a first
`roam push --json` to a local store, and prints the push's wall time, the time the secret
scan took inside it (`secret_scan_seconds`), the files it scanned and their share; then the
same as processor time (`secret_scan_cpu_seconds` against the push process's user + system
time), which a busy machine does not stretch: there the scan's one thread waits for a core
as long as each of the packer's threads, so its share of the wall time is inflated.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homes import SPECS, local_home


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", choices=sorted(SPECS), default="small")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-scan-cost-"))
    _home, env, roam = local_home(work, args.home)
    subprocess.run([*roam, "init"], env=env, check=True, capture_output=True)
    before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([*roam, "push", "--json"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    push_cpu = _children_cpu() - before
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:])
        return 1
    result = json.loads(done.stdout)
    scan = float(result["secret_scan_seconds"])
    print(f"home {args.home}: first push {wall:.2f} s, secret scan {scan:.2f} s "
          f"({100 * scan / wall:.1f} %), {result['secret_scan_files']} files scanned, "
          f"{result['bytes_changed'] / 1e6:.1f} MB pushed, findings "
          f"{len(result['secret_findings'])}")
    scan_cpu = float(result.get("secret_scan_cpu_seconds", "nan"))
    print(f"  processor time: push {push_cpu:.2f} s, secret scan {scan_cpu:.2f} s "
          f"({100 * scan_cpu / push_cpu:.1f} %); the push waited "
          f"{float(result.get('secret_scan_wait_seconds', scan)):.2f} s for the scan after "
          f"packing; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
