"""roam against restic: one command, documented in bench/README.md.

    python3 -m uv run --all-packages python bench/run.py [--quick] [--runs N] [--keep]

Generates the synthetic homes (cached under the work directory), runs scenarios 1-6 side by
side, and rewrites docs/benchmarks.md and docs/benchmarks.png. `--quick` runs the small home
only (a smoke test of the harness, a few seconds of work) and writes to the work directory
unless --out is given.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure
import report
from network import NetResult, run_network
from network import table as network_table
from scenarios import Bench, Result
from tools import Roam, compile_roam, ensure_restic

REPO = Path(__file__).resolve().parent.parent


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def bounds(results: list[Result], rates: dict[str, float]) -> list[str]:
    """Each unmet target with the number that bounds it."""
    python_sha = rates.get("python hashlib SHA-256 (4 MiB)", float("nan"))
    machine_sha = rates.get("openssl speed SHA-256 (machine)", float("nan"))
    why = {
        "1": "a remembered status (roam/cache/status.json) costs one interpreter start-up and "
             "the CLI's imports (~0.1 s), loading the scope rules (~0.02 s) and one `lstat` "
             "per folder and per shared file in Python (~0.07 s on `large`); a full look, the "
             "first status after a change, also reads the state's digests and the stat cache and "
             "decides every name (see the notes).",
        "2": f"bytes are hashed in Python at {python_sha:.0f} MB/s against the machine's "
             f"{machine_sha:.0f} MB/s (`openssl speed`); packs are compressed and sealed in "
             "two worker threads beside the reading, and every tree is its own object (3,000 "
             "on `large`, each fsynced before it is linked; folders are synced once per "
             "barrier).",
        "3": "an incremental push pays the same walk and state reading as a full status "
             "look, and reads every base entry from state.db (it writes only the changed "
             "rows).",
        "4": "file creation and writing in the kernel (ext4_create and the page-cache copy "
             "are most of the time; restic spreads them over goroutines on both cores, roam "
             "creates files from one thread while a second reads, decrypts and decompresses "
             "ahead), the 3,000 tree objects read and checked before anything is written "
             "(~0.3 s), and the durability restic skips: the journal and the state are "
             "fsynced and the file system is synced before anything is renamed into place.",
        "5": "peak RSS includes the interpreter and two packs being sealed.",
        "6a": "interpreter start-up plus importing the CLI's modules (boto3, GitPython and "
              "httpx are not imported).",
        "6b": "interpreter start-up, imports, reading settings and the scope rules, and the "
              "remote HEAD/snapshot checks.",
    }
    lines = []
    for r in results:
        if r.met:
            continue
        numbers = f"median {r.roam.median:.2f} s" + (
            "" if r.ratio != r.ratio else f", ratio {r.ratio:.2f}×")
        lines.append(f"{r.key} ({r.title}, target {r.target}): {numbers}. Bounded by: "
                     f"{why.get(r.key, 'see notes')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small home only (smoke test)")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per scenario (default 3, --quick 2)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench"),
                        help="where homes, stores and repositories live (default "
                        "/tmp/roam-bench)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (generated homes are reused next time)")
    parser.add_argument("--network", choices=("with", "without", "only"), default="without",
                        help="the S3 scenarios behind a latency proxy: with the local ones, "
                        "without them (default: bench/world.py runs them with git and "
                        "scale), or only them")
    parser.add_argument("--out", type=Path, default=None,
                        help="the Markdown page (default docs/benchmarks.md; with --quick, "
                        "WORKDIR/benchmarks.md)")
    args = parser.parse_args()
    runs = args.runs or (2 if args.quick else 3)
    out = args.out or (args.workdir / "benchmarks.md" if args.quick
                       else REPO / "docs" / "benchmarks.md")
    args.workdir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(args.workdir).free
    needed = 1 << 30 if args.quick else 16 << 30  # finished trees wait in trash/
    if free < needed:
        raise SystemExit(f"bench: {args.workdir} has {free >> 20} MiB free; "
                         f"{needed >> 20} MiB needed")
    restic_binary = ensure_restic()
    compile_roam()
    load_start = measure.loadavg()
    started = time.monotonic()
    bench = Bench(args.workdir, restic_binary, runs, say)
    net: list[NetResult] = []
    try:
        results = [] if args.network == "only" else run_all(bench, args.quick)
        weight = ("not checked" if args.quick or args.network == "only"
                  else bench.weight_untouched(bench_roam(bench, "large")))
        if args.network != "without":
            net = run_network(bench, "small" if args.quick else "large")
    finally:
        bench.trash.empty()
        if not args.keep:
            for name in ("stores", "restic", "restic-cache", "restore", "device-b"):
                shutil.rmtree(args.workdir / name, ignore_errors=True)
    rates = measure.rates()
    unmet = bounds(results, rates) + network_bounds(net)
    restic_version = bench.restic("small").version()
    out.parent.mkdir(parents=True, exist_ok=True)
    report.write(out, results, machine=measure.machine(), rates=rates,
                 restic_version=restic_version, runs=runs,
                 load=(load_start, measure.loadavg()), weight_check=weight,
                 quick=args.quick, unmet=unmet, sections=network_section(net))
    if not args.keep and not args.quick:
        shutil.rmtree(args.workdir / "homes", ignore_errors=True)
    print(report.table(results))
    if net:
        print(network_table(net))
    say(f"done in {time.monotonic() - started:.0f} s; wrote {out} and {out.with_suffix('.png')}")
    return 0


def network_section(net: list[NetResult]) -> list[str]:
    """The page's part on S3 behind a latency proxy (nothing when it was not run)."""
    if not net:
        return []
    return ["", "### Over a network: S3 (SeaweedFS) behind a latency proxy\n",
            "roam's S3 backend and restic's S3 backend against one SeaweedFS `weed mini` on "
            "127.0.0.1, through `bench/netproxy.py`: half the round-trip time added per "
            "direction, one extra round trip per new connection, every HTTP request counted. "
            "restic keeps its local cache between its commands, as on one machine; roam's "
            "pulling device starts empty. *Waves* are the round trips roam waited for one "
            "after another (the proxy's count of moments it went from nothing in flight to "
            "something).\n", network_table(net), "",
            *(f"- {r.key} at {r.rtt * 1000:.0f} ms: {note}" for r in net for note in r.notes)]


def network_bounds(net: list[NetResult]) -> list[str]:
    """Each unmet network target, with its numbers; the closing note explains them."""
    why = {
        "N1": "interpreter start-up and imports (boto3 included), the walk, one GET of HEAD.",
        "N2": "one PUT per tree (format v1: a folder's tree is its own object), 32 at once.",
        "N3": "the walk and state rewrite of a local incremental push, plus HEAD, the index "
              "listing, one pack, its index, the changed trees, the snapshot and HEAD.",
        "N4": "one GET per tree (level by level, 32 at once) before the blobs (one ranged "
              "GET per pack span, 8 at once), then the local install.",
    }
    return [f"{r.title} (target {r.target}): median {r.roam.median:.2f} s against "
            f"{r.restic.median:.2f} s, {r.requests('roam')} requests against "
            f"{r.requests('restic')}. Bounded by: {why.get(r.key, 'see notes')}"
            for r in net if not r.met]


def bench_roam(bench: Bench, name: str) -> Roam:
    return Roam(bench.workdir / "homes" / name)


def run_all(bench: Bench, quick: bool) -> list[Result]:
    results: list[Result] = []
    small_push, small_roam, small_restic = bench.first_push("small")
    if quick:
        results.append(bench.status_unchanged("small", small_roam, small_restic, None))
        results.append(small_push)
        results.append(bench.incremental("small", small_roam, small_restic))
        results.append(bench.pull_empty("small", small_restic))
        results.extend(bench.startup(small_roam, small_restic))
        return sorted(results, key=lambda r: r.key)
    large_push, large_roam, large_restic = bench.first_push("large")
    results.append(bench.status_unchanged("large", large_roam, large_restic, 0.3))
    results.append(large_push)
    results.append(bench.incremental("large", large_roam, large_restic))
    results.append(bench.pull_empty("large", large_restic))
    results.append(bench.memory())
    results.extend(bench.startup(small_roam, small_restic))
    return sorted(results, key=lambda r: r.key)


if __name__ == "__main__":
    sys.exit(main())
