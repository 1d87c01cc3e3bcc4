"""A full-look `roam status` at scale, two checkouts alternating: wall, processor time, peak RSS.

    python3 -m uv run --all-packages python bench/status_ab.py --other /work/main [--runs 7]

Makes the scale scenario's home once (`--files` files of 5 KiB mean, kept under `--workdir`
between runs), pushes it once to a local store with this checkout's roam, then runs
`status --json` with its memo removed (the "status, full look" of `bench/scale.py`; with
`--remembered`, kept: "status, remembered"), this
checkout and `--other`'s venv alternating. Prints the median wall time, processor time
(user + system, `ru_utime + ru_stime` of the child) and peak RSS of each, with the load
average; processor time is what to quote on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homes
from tools import ARCHIVE_KEY, REPO, _clean_env, compile_roam

MEAN = 5 * 1024


def _measured(cmd: list[str], home: Path, remembered: bool = False
              ) -> tuple[float, float, float, str]:
    """One run, reaped with wait4 so its own processor time and peak RSS are read."""
    if not remembered:
        (home / "roam" / "cache" / "status.json").unlink(missing_ok=True)
    env = {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY}
    out_path = Path(f"/tmp/status_ab-{os.getpid()}.out")
    with out_path.open("w") as out:
        started = time.perf_counter()
        child = subprocess.Popen([*cmd, "--home", str(home), "status", "--json"], env=env,
                                 stdout=out, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    text = out_path.read_text()
    out_path.unlink()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} status failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def _comparable(text: str) -> str:
    report = json.loads(text)
    report.pop("kept_in_backups", None)
    return json.dumps(report, sort_keys=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the other checkout")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--remembered", action="store_true",
                        help="time the remembered status (the memo kept) instead")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/status9-bench"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    settings = {"backend": "local", "local_dir": str(args.workdir / "store"),
                "device_name": "bench-a"}
    spec = homes.HomeSpec(f"scale{args.files}", files=args.files,
                          shared_bytes=args.files * MEAN)
    home = homes.generate(spec, args.workdir / "homes" / spec.name, settings)
    compile_roam()
    ours = [str(REPO / ".venv" / "bin" / "roam")]
    theirs = [str(args.other / ".venv" / "bin" / "roam")]
    env = {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY}
    if not (home / "roam" / "state.db").exists() and not (args.workdir / "store").exists():
        subprocess.run([*ours, "--home", str(home), "init", "--create-remote"], env=env,
                       check=True, capture_output=True)
        subprocess.run([*ours, "--home", str(home), "push", "--quiet"], env=env, check=True)
    # a warm stat cache on both sides, as in bench/scale.py (the push left one)
    _measured(ours, home)
    if args.remembered:
        time.sleep(2.5)  # the memo answers only for changes older than 2 s
        _measured(ours, home)
    load = os.getloadavg()
    samples: dict[str, list[tuple[float, float, float]]] = {"this": [], "other": []}
    outputs: dict[str, str] = {}
    for run in range(args.runs):
        pairs = [("this", ours), ("other", theirs)]
        for name, cmd in pairs if run % 2 == 0 else reversed(pairs):
            wall, cpu, rss, text = _measured(cmd, home, args.remembered)
            samples[name].append((wall, cpu, rss))
            outputs[name] = _comparable(text)
    print(f"{args.files} files, {args.runs} alternating pairs; load average "
          f"{' '.join(f'{x:.2f}' for x in load)} before, "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    for name, rows in samples.items():
        walls, cpus, rsses = zip(*rows, strict=True)
        print(f"{name:6s} wall median {statistics.median(walls):.3f} s  processor median "
              f"{statistics.median(cpus):.3f} s  peak RSS max {max(rsses):.0f} MiB  "
              f"(walls {' '.join(f'{w:.2f}' for w in walls)})")
    print("outputs identical" if outputs["this"] == outputs["other"] else
          "OUTPUTS DIFFER")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
