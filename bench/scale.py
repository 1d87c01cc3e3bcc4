"""The scale scenario: every verb on a home of 100,000 small files, peak RSS and time vs restic.

    python3 -m uv run --all-packages python bench/scale.py [--files N] [--runs N] [--no-restic]

On a local disk (the local backend; restic on a local repository), a home of `--files` shared
files of 5 KiB mean (issue 22's scale paragraph): first push, status (a full look, then the
remembered one), incremental push of 10 changed files, and `pull --apply` into an empty home,
each with its own peak RSS (`roam_core.testing.rss`). Prints a Markdown table to paste into
docs/benchmarks.md, with the load average before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homes
import measure
from measure import Sample
from tools import Restic, Roam, Trash, compile_roam, ensure_restic

MEAN = 5 * 1024
CHANGED = 10
#: Runs the CLI in this very interpreter, then reports the bytes it wrote (`wchar`, every
#: write(2) of the process: state, journal, store, output) to the file named first.
_COUNTED = """
import sys
from roam_core.cli.main import main
report = sys.argv.pop(1)
sys.argv[0] = "roam"
try:
    main()
    code = 0
except SystemExit as stop:
    code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
with open("/proc/self/io") as io:
    wchar = next(int(line.split()[1]) for line in io if line.startswith("wchar:"))
with open(report, "w") as out:
    out.write(str(wchar))
sys.exit(code)
"""


def say(message: str) -> None:
    print(f"bench scale: {message}", file=sys.stderr, flush=True)


def _settings(workdir: Path, device: str) -> dict[str, str]:
    return {"backend": "local", "local_dir": str(workdir / "store"), "device_name": device}


def _touch(home: Path, paths: list[str], run: int) -> None:
    """Change `CHANGED` files in place (same size, new bytes in the middle)."""
    for rel in paths[run * CHANGED:(run + 1) * CHANGED]:
        path = home / rel
        data = bytearray(path.read_bytes())
        middle = len(data) // 2
        data[middle:middle + 24] = f"scale run {run:04d} edit....".encode()[:24]
        path.write_bytes(bytes(data))


class CountedRoam(Roam):
    """roam on `home`, each run reporting the bytes its process wrote (`written`)."""

    def __init__(self, home: Path, report: Path) -> None:
        super().__init__(home)
        self.report = report
        self.cmd = [sys.executable, "-c", _COUNTED, str(report)]

    def written(self) -> int:
        """The bytes the last run wrote (`/proc/self/io` wchar at its end)."""
        return int(self.report.read_text())


def _second_device(workdir: Path, trash: Trash) -> Path:
    other = workdir / "device-b"
    trash.discard(other)
    other.mkdir(parents=True)
    lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
    lines += [f"        {k}: {v}" for k, v in _settings(workdir, "bench-b").items()]
    (other / "config.yaml").write_text("\n".join(lines) + "\n")
    Roam(other)("init")
    return other


def run_scale(workdir: Path, files: int, runs: int, restic_binary: str | None,
              writes: dict[str, list[int]] | None = None,
              say: Callable[[str], None] = say) -> list[tuple[str, list[Sample], list[Sample]]]:
    """(scenario, roam samples, restic samples) for each scenario.

    `writes`, when given, receives per incremental push the bytes its process wrote
    (`written`), the store's growth (`store_growth`: the local store is on the same disk, so
    `written` minus it is what the push wrote besides the store: state, journal, caches) and
    the size of the home's `roam/` folder after it (`roam_folder`).
    """
    trash = Trash(workdir / "trash")
    spec = homes.HomeSpec(f"scale{files}", files=files, shared_bytes=files * MEAN)
    say(f"home of {files} files: generating (cached between runs when unchanged)")
    home = homes.generate(spec, workdir / "homes" / spec.name, _settings(workdir, "bench-a"))
    listing = workdir / "scale.files"
    shared = homes.shared_paths(home)
    listing.write_text("\n".join(shared) + "\n")
    edited = [rel for rel in shared if rel.startswith("skills/")][::max(files // 400, 1)]
    restic = None if restic_binary is None else Restic(
        restic_binary, workdir / "restic", workdir / "restic-cache", trash)
    rows: list[tuple[str, list[Sample], list[Sample]]] = []

    def measured(name: str, roam_step: Callable[[], Sample],
                 restic_step: Callable[[], Sample] | None) -> None:
        roam_samples: list[Sample] = []
        restic_samples: list[Sample] = []
        for run in range(runs):
            say(f"{name}: run {run + 1}/{runs}")
            steps = [(roam_samples, roam_step)]
            if restic_step is not None:
                steps.append((restic_samples, restic_step))
            for series, step in steps if run % 2 == 0 else reversed(steps):
                series.append(step())
        rows.append((name, roam_samples, restic_samples))

    roam = Roam(home)

    def first_push() -> Sample:
        trash.discard(workdir / "store")
        trash.discard(home / "roam")
        roam("init", "--create-remote")
        return roam("push", "--quiet")

    def first_backup() -> Sample:
        assert restic is not None
        restic.init()
        return restic.backup(home, listing)

    measured("first push", first_push, first_backup if restic else None)

    def full_status() -> Sample:
        (home / "roam" / "cache" / "status.json").unlink(missing_ok=True)
        return roam("status", "--json")

    def backup() -> Sample:
        assert restic is not None
        return restic.backup(home, listing)

    measured("status, full look", full_status, backup if restic else None)
    time.sleep(2.5)  # the memo answers only for changes older than 2 s
    roam("status", "--json")
    measured("status, remembered", lambda: roam("status", "--json"), None)
    counter = iter(range(1000))
    counted = CountedRoam(home, workdir / "written.txt")
    found = writes if writes is not None else {}

    def incremental() -> Sample:
        _touch(home, edited, next(counter))
        before = homes.tree_bytes(workdir / "store")
        sample = counted("push", "--quiet")
        found.setdefault("written", []).append(counted.written())
        found.setdefault("store_growth", []).append(homes.tree_bytes(workdir / "store") - before)
        found.setdefault("roam_folder", []).append(homes.tree_bytes(home / "roam"))
        return sample

    measured(f"incremental push ({CHANGED} files)", incremental, backup if restic else None)

    def pull() -> Sample:
        other = _second_device(workdir, trash)
        sample = Roam(other)("pull", "--apply", "--quiet")
        trash.discard(other)
        return sample

    def restore() -> Sample:
        assert restic is not None
        target = workdir / "restore"
        trash.discard(target)
        sample = restic("restore", "latest", "--target", str(target))
        trash.discard(target)
        return sample

    measured("pull --apply into an empty home", pull, restore if restic else None)
    trash.empty()
    return rows


def table(rows: list[tuple[str, list[Sample], list[Sample]]]) -> str:
    lines = ["| scenario | roam median | roam peak RSS | restic median | restic peak RSS | "
             "roam/restic |", "|---|---:|---:|---:|---:|---:|"]
    for name, ours, theirs in rows:
        mine = statistics.median(s.wall for s in ours)
        peak = max(s.rss_mib for s in ours)
        if theirs:
            other = statistics.median(s.wall for s in theirs)
            other_peak = max(s.rss_mib for s in theirs)
            lines.append(f"| {name} | {mine:.2f} s | {peak:.0f} MiB | {other:.2f} s | "
                         f"{other_peak:.0f} MiB | {mine / other:.2f}× |")
        else:
            lines.append(f"| {name} | {mine:.2f} s | {peak:.0f} MiB | – | – | – |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000, help="shared files (100,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario (3)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench-scale"))
    parser.add_argument("--no-restic", action="store_true", help="roam only")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    restic_binary = None if args.no_restic else ensure_restic()
    compile_roam()
    load_start = measure.loadavg()
    rows = run_scale(args.workdir, args.files, args.runs, restic_binary)
    print(f"{args.files} files, {args.runs} runs; load average {load_start} before, "
          f"{measure.loadavg()} after")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
