"""First push over a latency proxy: where its time goes and how many PUTs travel at once.

Runs the `large` home's first push on SeaweedFS behind `netproxy.LatencyProxy` at each RTT,
for one or two roam checkouts (A/B: each checkout's own venv runs its `roam`) and restic's
first backup, rotating who goes first, and prints per run the wall time, the requests, the
most PUTs in flight at once, the time-weighted mean of pack PUTs in flight, and a wall
breakdown read from the proxy's log (start to first pack PUT, the packs' span, trees and
index tail, snapshot to HEAD). Then the medians per RTT and tool, and the load average.

    python bench/push_uploads.py 0,40,100 /tmp/workdir 3 [--before CHECKOUT] [--after CHECKOUT]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import measure
from netproxy import Request, latency_proxy, summarize
from network import NetworkBench, s3_server
from run import say
from scenarios import Bench
from tools import compile_roam, ensure_restic

REPO = Path(__file__).resolve().parent.parent


def _kind(request: Request) -> str:
    parts = request.target.partition("?")[0].split("/")
    if "objects" in parts:
        return parts[parts.index("objects") + 1]
    return "refs" if "refs" in parts else "other"


def _in_flight(requests: list[Request], method: str) -> tuple[int, float]:
    """The most `method` requests in flight at once, and the mean while any was."""
    events = sorted([(r.started, 1) for r in requests if r.method == method]
                    + [(r.ended or r.started, -1) for r in requests if r.method == method])
    busy = peak = 0
    weighted = spent = 0.0
    last = None
    for when, step in events:
        if last is not None and busy:
            weighted += busy * (when - last)
            spent += when - last
        busy += step
        peak = max(peak, busy)
        last = when
    return peak, (weighted / spent if spent else 0.0)


def breakdown(requests: list[Request], began: float) -> dict[str, float]:
    """Phases of a first push, in seconds, from the proxy's log (client-side times)."""
    packs = [r for r in requests if r.method == "PUT" and _kind(r) == "packs"]
    writes = [r for r in requests if r.method == "PUT" and _kind(r) in ("packs", "index")]
    snapshot = [r for r in requests if r.method == "PUT" and _kind(r) == "snapshots"]
    if not packs or not snapshot:
        return {}
    def median(kind: str) -> float:
        took = [(r.ended or r.started) - r.started for r in writes if _kind(r) == kind]
        return statistics.median(took) if took else 0.0

    first = min(r.started for r in packs)
    last = max((r.ended or r.started) for r in writes)
    return {"to_first_pack": first - began, "packs_and_indexes": last - first,
            "to_snapshot": snapshot[0].started - last,
            "snapshot_to_end": max((r.ended or r.started) for r in requests)
            - snapshot[0].started, "pack_put": median("packs"), "index_put": median("index")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rtts", help="round-trip times in ms, comma-separated")
    parser.add_argument("workdir", type=Path)
    parser.add_argument("runs", type=int)
    parser.add_argument("--before", type=Path, help="a second roam checkout (with .venv)")
    parser.add_argument("--after", type=Path, default=REPO,
                        help="the roam checkout measured (with .venv); this one by default")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=CHECKOUT",
                        help="one more roam checkout (with .venv) to measure beside them")
    parser.add_argument("--home", default="large")
    args = parser.parse_args()
    restic_binary = ensure_restic()
    compile_roam()
    base = Bench(args.workdir, restic_binary, args.runs, say)
    home = base.home(args.home)
    listing = args.workdir / f"{args.home}.files"
    tools = {"after": [str(args.after / ".venv/bin/roam")]}
    if args.before:
        tools["before"] = [str(args.before / ".venv/bin/roam")]
    for variant in args.variant:
        name, _, checkout = variant.partition("=")
        tools[name] = [str(Path(checkout) / ".venv/bin/roam")]
    loads = [measure.loadavg()]
    try:
        results = _runs(args, base, home, listing, tools, loads)
    finally:
        base.trash.empty()
    _report(results, loads)


def _runs(args: argparse.Namespace, base: Bench, home: Path, listing: Path,
          tools: dict[str, list[str]], loads: list[str]
          ) -> dict[tuple[float, str], list[dict[str, float]]]:
    """Each tool's first push (restic's first backup) `args.runs` times at each RTT."""
    results: dict[tuple[float, str], list[dict[str, float]]] = {}
    with s3_server() as server:
        port = int(server.endpoint_url.rpartition(":")[2])  # type: ignore[attr-defined]
        for rtt in (float(ms) / 1000 for ms in args.rtts.split(",")):
            with latency_proxy(port, rtt / 2) as proxy:
                bench = NetworkBench(base, server, proxy, rtt)
                restic = bench.restic(args.home)
                order = [*tools, "restic"]
                for run in range(args.runs):
                    turn = order[run % len(order):] + order[:run % len(order)]
                    for tool in turn:
                        if tool == "restic":
                            restic.init()
                            proxy.reset()
                            began = time.monotonic()
                            sample = restic.backup(home, listing)
                        else:
                            _fresh, roam = bench.fresh_home(args.home)
                            roam.cmd = tools[tool]
                            proxy.reset()
                            began = time.monotonic()
                            sample = roam("push", "--quiet")
                        requests = proxy.requests()
                        peak, mean = _in_flight(requests, "PUT")
                        row = {"wall": sample.wall, "rss": sample.rss_mib,
                               "requests": len(requests), "put_peak": peak,
                               "put_mean": mean, "waves": summarize(requests).waves,
                               **breakdown(requests, began)}
                        results.setdefault((rtt, tool), []).append(row)
                        say(f"{rtt * 1000:.0f} ms {tool} run {run + 1}: "
                            + ", ".join(f"{k} {v:.2f}" for k, v in row.items()))
                    loads.append(measure.loadavg())
    return results


def _report(results: dict[tuple[float, str], list[dict[str, float]]],
            loads: list[str]) -> None:
    print(f"load average: {loads}")
    print("| RTT | tool | wall median (s) | runs | requests | PUTs in flight (peak / mean) "
          "| peak RSS (MiB) |")
    print("|---:|---|---:|---|---:|---:|---:|")
    for (rtt, tool), rows in results.items():
        walls = [row["wall"] for row in rows]
        print(f"| {rtt * 1000:.0f} ms | {tool} | {statistics.median(walls):.2f} | "
              f"{', '.join(f'{w:.2f}' for w in walls)} | "
              f"{statistics.median(row['requests'] for row in rows):.0f} | "
              f"{statistics.median(row['put_peak'] for row in rows):.0f} / "
              f"{statistics.median(row['put_mean'] for row in rows):.1f} | "
              f"{max(row['rss'] for row in rows):.0f} |")


if __name__ == "__main__":
    main()
