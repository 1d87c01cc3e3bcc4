"""Issue 22's whole evidence from one command: S3 and git over a latency proxy, and scale.

    python3 -m uv run --all-packages python bench/world.py [--parts s3,git,scale] [--runs 3]
        [--rtt-ms 0,40,100] [--files 100000] [--workdir /tmp/roam-world] [--compose]

Parts (bench/README.md says what each costs in time):

- `s3`: the `large` home through SeaweedFS behind `bench/netproxy.py` at each RTT: first
  push, status with nothing changed, incremental push, `pull --apply` into an empty home,
  against restic's S3 backend on the same server, alternating (`bench/network.py`);
- `git`: the same on roam's git backend over smart HTTP behind the proxy, restic on S3 at the
  same RTT (`bench/network_git.py`);
- `scale`: `--files` files of 5 KiB mean on a local disk: first push, status (full look and
  remembered), incremental push of 10 files, pull into an empty home, roam and restic, peak
  RSS each and what the incremental push wrote besides the store (`bench/scale.py`).

Each part saves its raw results as `WORKDIR/<part>.json`; the page's `world` block in
docs/benchmarks.md is then composed from whichever of those files exist, so parts can be run
separately (`--compose` composes without running anything).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import measure
import world_page
from measure import Sample
from network import NetResult, run_network
from network_git import run_git_network
from scale import run_scale
from scenarios import Bench
from tools import compile_roam, ensure_restic

REPO = Path(__file__).resolve().parent.parent
PARTS = ("s3", "git", "scale")
#: Processor seconds per unit of work measured in the loaded run of 2026-12-02 (bench/README.md,
#: "Planning the quiet run"), taken as a quiet 2-core machine's wall time (a quiet run of the
#: s3 part in the seventh session took what its processor time here says): (fixed, per run
#: per RTT) for s3 and git; (per 1,000 files generated, per run per 1,000 files) for scale.
COST = {"s3": (60.0, 51.0), "git": (45.0, 63.0), "scale": (0.9, 1.6)}


class Progress:
    """Messages on stderr with the time since the run started and the part being run."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.part = "world"

    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"bench {self.part} [{elapsed / 60:5.1f} min]: {message}", file=sys.stderr,
              flush=True)


def estimate(parts: list[str], runs: int, scale_runs: int, rtts: int, files: int) -> float:
    """Seconds the parts should take on a quiet 2-core machine (see `COST`)."""
    total = 0.0
    for part in parts:
        fixed, unit = COST[part]
        if part == "scale":
            total += (fixed + unit * scale_runs) * files / 1000
        else:
            total += fixed + unit * runs * rtts
    return total


def commit() -> str:
    """The checkout's commit, with `+dirty` when files differ from it.

    `BENCH_COMMIT` names it for a checkout exported without its history (`git archive`),
    which lets a long run go on while the worktree moves.
    """
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                              text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _sample(sample: Sample) -> dict[str, float]:
    return {"wall": round(sample.wall, 3), "rss_mib": round(sample.rss_mib, 1)}


def net_rows(results: list[NetResult]) -> list[dict[str, Any]]:
    """A network part's results as plain data: samples, requests and notes per cell."""
    return [{"key": r.key, "scenario": r.title.split(" (")[0], "rtt_ms": round(r.rtt * 1000),
             "target": r.target, "ratio_target": r.ratio_target,
             "roam": [_sample(s) for s in r.roam.samples],
             "restic": [_sample(s) for s in r.restic.samples],
             "roam_requests": [asdict(s) for s in r.roam_requests],
             "restic_requests": [asdict(s) for s in r.restic_requests],
             "notes": list(r.notes)} for r in results]


def scale_rows(rows: list[tuple[str, list[Sample], list[Sample]]],
               writes: dict[str, list[int]]) -> list[dict[str, Any]]:
    """The scale part's rows as plain data; the incremental push carries its writes."""
    found = []
    for name, ours, theirs in rows:
        row: dict[str, Any] = {"scenario": name, "roam": [_sample(s) for s in ours],
                               "restic": [_sample(s) for s in theirs]}
        if name.startswith("incremental"):
            row["writes"] = writes
        found.append(row)
    return found


def _cpu() -> float:
    """Processor seconds of every child reaped so far (the commands, servers and proxies'
    children); the machine's load inflates wall time much more than this."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_part(part: str, args: argparse.Namespace, restic_binary: str,
             say: Progress) -> dict[str, Any]:
    """Run one part in its own folder of the work directory; its results as plain data."""
    folder = args.workdir / part
    folder.mkdir(parents=True, exist_ok=True)
    homes = folder / "homes"
    if not homes.exists():  # parts share the generated homes (generating `large` takes minutes)
        (args.workdir / "homes").mkdir(exist_ok=True)
        homes.symlink_to(args.workdir / "homes")
    rtts = tuple(ms / 1000 for ms in args.rtt_ms)
    load_start, started, cpu = measure.loadavg(), time.monotonic(), _cpu()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    base = Bench(folder, restic_binary, args.scale_runs if part == "scale" else args.runs, say)
    info: dict[str, Any] = {"part": part, "runs": args.runs, "command": args.command}
    try:
        if part == "s3":
            info.update(home=args.home, rows=net_rows(run_network(base, args.home, rtts)))
        elif part == "git":
            info.update(home=args.home, rows=net_rows(run_git_network(base, args.home, rtts)))
        else:
            writes: dict[str, list[int]] = {}
            rows = run_scale(folder, args.files, args.scale_runs, restic_binary, writes, say)
            info.update(files=args.files, runs=args.scale_runs, rows=scale_rows(rows, writes))
    finally:
        set_aside(folder, args.workdir / "trash", part)
    info.update(started=stamp, seconds=round(time.monotonic() - started, 1),
                cpu_seconds=round(_cpu() - cpu, 1),
                load=[load_start, measure.loadavg()], commit=commit(),
                machine=measure.machine(),
                restic=subprocess.run([restic_binary, "version"], capture_output=True,
                                      text=True).stdout.strip())
    return info


def set_aside(folder: Path, trash: Path, part: str) -> None:
    """Move what a part left (stores, repositories, pulled homes) into `trash`, instantly.

    Deleting it would cost minutes: this machine's disk discards freed blocks, ~850 files a
    second, and a part leaves 100,000s of files. Deleting it between parts would also slow
    the next part's file creation (see `tools.Trash`). `delete_later` empties `trash` once
    the page is written.
    """
    trash.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%H%M%S")
    for path in folder.iterdir():
        if path.name != "homes":
            path.rename(trash / f"{part}-{stamp}-{path.name}")


def delete_later(trash: Path, say: Progress) -> None:
    """Delete `trash` in a process of its own at idle priority, after this one exits."""
    if not trash.exists():
        return
    command = ["nice", "-n", "19", "rm", "-rf", str(trash)]
    if shutil.which("ionice"):
        command = ["ionice", "-c", "3", *command]
    child = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    say(f"deleting {trash} in the background at idle priority (pid {child.pid})")


def parse_list(text: str, convert: Callable[[str], Any]) -> list[Any]:
    """A comma-separated option's values; a clear error for a bad one."""
    try:
        return [convert(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list: {text!r}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=lambda t: parse_list(t, str), default=list(PARTS),
                        help="comma-separated parts to run: s3,git,scale (default all)")
    parser.add_argument("--runs", type=int, default=3,
                        help="roam/restic pairs per cell, alternating who goes first (3)")
    parser.add_argument("--rtt-ms", type=lambda t: parse_list(t, float), default=[0, 40, 100],
                        help="round-trip times of the network parts, ms (0,40,100)")
    parser.add_argument("--scale-runs", type=int, default=None,
                        help="pairs per cell of the scale part (default: --runs); each "
                        "pair at 100,000 files costs minutes")
    parser.add_argument("--files", type=int, default=100_000,
                        help="files in the scale part's home (100000)")
    parser.add_argument("--home", default="large", choices=("small", "large"),
                        help="the network parts' home (large; small is a smoke test)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-world"),
                        help="homes, stores and each part's JSON (/tmp/roam-world)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md",
                        help="the page whose world block is rewritten (docs/benchmarks.md)")
    parser.add_argument("--compose", action="store_true",
                        help="run nothing: compose the page from the parts' saved JSON")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated homes (the next run reuses them)")
    args = parser.parse_args(argv)
    if not args.rtt_ms:
        parser.error("--rtt-ms: give at least one round-trip time")
    args.command = " ".join(["python bench/world.py", *(sys.argv[1:] if argv is None else argv)])
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown or not args.parts:
        parser.error(f"--parts: choose from {','.join(PARTS)} (got {','.join(args.parts)})")
    if args.scale_runs is None:
        args.scale_runs = args.runs
    if min(args.runs, args.scale_runs) < 1 or args.files < 100 or min(args.rtt_ms) < 0:
        parser.error("--runs and --scale-runs must be ≥ 1, --files ≥ 100, --rtt-ms "
                     "non-negative")
    return args


def load_parts(workdir: Path) -> dict[str, dict[str, Any]]:
    """Every part's saved results found in `workdir`, by part."""
    found = {}
    for part in PARTS:
        path = workdir / f"{part}.json"
        if not path.exists():
            continue
        try:
            found[part] = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"bench world: cannot read {path}: {error}") from None
    return found


def disk_needed(args: argparse.Namespace) -> int:
    """Bytes a run holds at its peak: the homes, and every part's leftovers (set aside until
    the page is written): per network cell a pulled home and a restore of `large` (~1.1 GB;
    on git also two mirrors of its store, ~0.8 GB), per scale run a pulled home and a
    restore (~1.2 GB per 100,000 files)."""
    rtts = len(args.rtt_ms) * args.runs
    per_cell = {"s3": 1.2, "git": 2.0}
    gib = 4.0 + sum(per_cell.get(part, 0.0) * rtts for part in args.parts)
    if "scale" in args.parts:
        gib += 1.2 * args.scale_runs * args.files / 100_000
    return int(gib * (1 << 30))


def run_parts(args: argparse.Namespace, restic_binary: str, say: Progress) -> list[str]:
    """Run each part, saving its JSON; the parts that failed (the others still run)."""
    failed = []
    for part in args.parts:
        say.part = part
        saved = args.workdir / f"{part}.json"
        saved.unlink(missing_ok=True)  # an older run's results must not pass for this one's
        say(f"starting (load {measure.loadavg()})")
        try:
            info = run_part(part, args, restic_binary, say)
        except measure.CommandFailed as error:
            say(f"FAILED: {error}")
            failed.append(part)
            continue
        saved.write_text(json.dumps(info, indent=1) + "\n")
        say(f"done in {info['seconds'] / 60:.1f} min; saved {part}.json")
    say.part = "world"
    return failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    say = Progress()
    failed: list[str] = []
    if not args.compose:
        needed = estimate(args.parts, args.runs, args.scale_runs, len(args.rtt_ms), args.files)
        say(f"parts {','.join(args.parts)}, {args.runs} run(s) per cell; about "
            f"{needed / 60:.0f} min on a quiet 2-core machine (load now {measure.loadavg()})")
        args.workdir.mkdir(parents=True, exist_ok=True)
        free, needed_bytes = shutil.disk_usage(args.workdir).free, disk_needed(args)
        if free < needed_bytes:
            raise SystemExit(f"bench world: {args.workdir} has {free >> 30} GiB free; about "
                             f"{needed_bytes >> 30} GiB needed (run fewer parts at a time)")
        restic_binary = ensure_restic()
        compile_roam()
        try:
            failed = run_parts(args, restic_binary, say)
        finally:
            if not args.keep and (args.workdir / "homes").exists():
                (args.workdir / "trash").mkdir(exist_ok=True)
                (args.workdir / "homes").rename(
                    args.workdir / "trash" / f"homes-{time.strftime('%H%M%S')}")
    parts = load_parts(args.workdir)
    if not parts:
        raise SystemExit(f"bench world: no part's results in {args.workdir} "
                         f"(expected {', '.join(p + '.json' for p in PARTS)})")
    block = world_page.block(parts)
    world_page.write(args.out, block)
    print(block)
    say(f"wrote the world block of {args.out} from {', '.join(sorted(parts))}")
    delete_later(args.workdir / "trash", say)
    if failed:
        say(f"failed: {', '.join(failed)} (see above); the page holds the other parts")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
