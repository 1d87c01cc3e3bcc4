"""The push scanner alone over the `large` home's files: RE2 against the standard library.

    python bench/scan_alone.py [--work DIR] [--rounds N]

Generates the benchmark's `large` home (bench/homes.py) unless DIR/home holds it, then runs
`Scanner.scan_file` over every shared file (binaries are skipped after 8 KiB, as on push) in
a fresh interpreter per run, alternating `compiled` (google-re2 finds the runs) and `stdlib`
(`re2` made unimportable: regions.int_runs), and prints each run's processor time and the
medians. Processor time, not wall time: it is what the scan costs a push beside the packer,
and a loaded machine stretches it far less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homes import MARKER, SPECS, generate

CHILD = """
import json, sys, time
from pathlib import Path
if sys.argv[1] == "stdlib":
    sys.modules["re2"] = None
from roam_core.secretscan.scan import Scanner
home = Path(sys.argv[2])
rels = json.loads((home / sys.argv[3]).read_text())["shared"]
files = [(rel, str(home / rel)) for rel in rels]
scanner = Scanner()
cpu = time.process_time()
found = sum(len(scanner.scan_file(rel, location)) for rel, location in files)
print(time.process_time() - cpu, found, len(files))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-scan-alone-"))
    home = work / "home"
    generate(SPECS["large"], home, {"backend": "local", "local_dir": str(work / "store")})
    runs: dict[str, list[float]] = {"compiled": [], "stdlib": []}
    for round_ in range(args.rounds):
        for mode in ("compiled", "stdlib") if round_ % 2 == 0 else ("stdlib", "compiled"):
            out = subprocess.run([sys.executable, "-c", CHILD, mode, str(home), MARKER],
                                 capture_output=True, text=True, check=True).stdout.split()
            runs[mode].append(float(out[0]))
            print(f"{mode:8} {float(out[0]):.3f} s processor time, {out[2]} files, "
                  f"{out[1]} findings, load {os.getloadavg()[0]:.1f}", flush=True)
    for mode, times in runs.items():
        print(f"{mode:8} median {statistics.median(times):.3f} s "
              f"({' / '.join(f'{t:.3f}' for t in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
