"""An S3 pull through the latency proxy, A/B: this checkout, another one, and restic restore.

    python3 -m uv run --all-packages python bench/pull_s3_ab.py [--rtt-ms 0,40,100] [--runs 3]
        [--other /work/main] [--no-restic] [--home large] [--timeline]

SeaweedFS starts as the tests start it (stopped by its PID), the home is generated
(bench/homes.py, cached under `--work`) and pushed once through `bench/netproxy.py` at 0 ms,
and restic backs the same files up to the same server. Then, per RTT, a proxy at that RTT and
alternating runs of: `roam pull --apply` into a fresh empty home (the device's `init` is
untimed), the same with `PYTHONPATH` set to `--other`'s packages, and `restic restore` into a
fresh folder. Each run prints its wall time, processor time (user + system, `wait4`), peak
RSS, requests and waves (round trips waited one after another, `netproxy.summarize`); then
the medians and the load average. `--timeline` prints each roam pull's requests in order
with the wave each started in: what the critical path waits for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homes
from netproxy import LatencyProxy, Request, latency_proxy, summarize
from network import s3_server
from pull_profile import measured
from tools import ARCHIVE_KEY, RESTIC_PASSWORD, Trash, _clean_env, compile_roam

#: (wall s, processor s, peak RSS MiB, requests, waves) of one run.
Run = tuple[float, float, float, int, int]


def _settings(url: str, bucket: str, device: str) -> dict[str, str]:
    return {"backend": "s3", "s3_bucket": bucket, "s3_prefix": "roam-ab",
            "s3_endpoint_url": url, "s3_region": "us-east-1", "device_name": device}


def _write_config(home: Path, settings: dict[str, str]) -> None:
    lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
    lines += [f"        {k}: {v}" for k, v in settings.items()]
    (home / "config.yaml").write_text("\n".join(lines) + "\n")


def timeline(requests: list[Request]) -> str:
    """One line per request, in start order, with its wave and times from the first start."""
    ordered = sorted(requests, key=lambda r: r.started)
    if not ordered:
        return "(no requests)"
    origin = ordered[0].started
    lines: list[str] = []
    wave = 0
    busy_until = float("-inf")
    for request in ordered:
        if request.started >= busy_until:
            wave += 1
        ended = request.ended if request.ended is not None else request.started
        busy_until = max(busy_until, ended) if request.started < busy_until else ended
        path, _, query = request.target.partition("?")
        target = path.rpartition("/roam-ab/")[2] or f"{path.rpartition('/')[2]}?{query}"
        lines.append(f"  w{wave:<3d} {1000 * (request.started - origin):8.0f} ms "
                     f"+{1000 * (ended - request.started):6.0f} ms  {request.method:4s} "
                     f"{target[:60]} {request.range}")
    return "\n".join(lines)


class Driver:
    """One SeaweedFS, one pushed store and restic repository, pulls measured per RTT."""

    def __init__(self, work: Path, server: object, spec: str) -> None:
        self.work = work
        self.server = server
        self.trash = Trash(work / f"trash-{os.getpid()}")
        self.bucket = server.fresh_bucket()  # type: ignore[attr-defined]
        self.port = int(server.endpoint_url.rpartition(":")[2])  # type: ignore[attr-defined]
        self.credentials = {"AWS_ACCESS_KEY_ID": server.access_key_id,  # type: ignore[attr-defined]
                            "AWS_SECRET_ACCESS_KEY": server.secret_access_key}  # type: ignore[attr-defined]
        self.spec = spec
        self.url = ""

    def roam_env(self, pythonpath: str | None = None) -> dict[str, str]:
        env = {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY,
               "ROAM_S3_ACCESS_KEY_ID": self.credentials["AWS_ACCESS_KEY_ID"],
               "ROAM_S3_SECRET_ACCESS_KEY": self.credentials["AWS_SECRET_ACCESS_KEY"]}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        return env

    def restic_env(self) -> dict[str, str]:
        return {**_clean_env(), **self.credentials, "RESTIC_PASSWORD": RESTIC_PASSWORD,
                "RESTIC_REPOSITORY": f"s3:{self.url}/{self.bucket}/restic-ab",
                "RESTIC_CACHE_DIR": str(self.work / "restic-cache")}

    def roam(self, home: Path, *args: str, env: dict[str, str] | None = None) -> None:
        subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home", str(home), *args],
                       env=env or self.roam_env(), check=True, stdout=subprocess.DEVNULL)

    def setup(self, proxy: LatencyProxy) -> None:
        """Push the home and back it up with restic, through the proxy at 0 ms."""
        self.url = proxy.url
        home = homes.generate(homes.SPECS[self.spec], self.work / "homes" / self.spec,
                              _settings(proxy.url, self.bucket, "bench-a"))
        self.trash.discard(home / "roam")
        self.roam(home, "init", "--create-remote")
        self.roam(home, "push", "--quiet")
        listing = self.work / "files.txt"
        listing.write_text("\n".join(homes.shared_paths(home)) + "\n")
        self.trash.discard(self.work / "restic-cache")
        subprocess.run(["restic", "--quiet", "init"], env=self.restic_env(), check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["restic", "--quiet", "backup", "--files-from-verbatim", str(listing),
                        "--host", "bench"], env=self.restic_env(), cwd=home, check=True)

    def device(self, proxy: LatencyProxy, env: dict[str, str]) -> Path:
        """A fresh empty home on the store, `roam init` run there (untimed)."""
        home = self.work / "device-b"
        self.trash.discard(home)
        home.mkdir(parents=True)
        _write_config(home, _settings(proxy.url, self.bucket, "bench-b"))
        self.roam(home, "init", env=env)
        return home

    def phases(self, proxy: LatencyProxy, profile: Path | None,
               pythonpath: str | None = None) -> None:
        """One pull in a process timing its phases and threads (bench/pull_profile.py)."""
        env = self.roam_env(pythonpath)
        home = self.device(proxy, env)
        proxy.reset()
        argv = [sys.executable, str(Path(__file__).with_name("pull_profile.py")), "phases-of",
                "--device", str(home)]
        subprocess.run([*argv, *(["--profile", str(profile)] if profile else [])], env=env,
                       check=True)
        print(f"  {summarize(proxy.requests())}", flush=True)
        self.trash.discard(home)

    def roam_pull(self, proxy: LatencyProxy, pythonpath: str | None,
                  show: bool) -> Callable[[], Run]:
        def step() -> Run:
            env = self.roam_env(pythonpath)
            home = self.device(proxy, env)
            proxy.reset()
            wall, cpu, rss = measured([sys.executable, "-m", "roam_core.cli.main", "--home",
                                       str(home), "pull", "--apply", "--quiet"], env)
            requests = proxy.requests()
            self.trash.discard(home)
            if show:
                print(timeline(requests), flush=True)
            summary = summarize(requests)
            return wall, cpu, rss, summary.requests, summary.waves
        return step

    def restore(self, proxy: LatencyProxy) -> Run:
        target = self.work / "restore"
        self.trash.discard(target)
        self.url = proxy.url
        proxy.reset()
        wall, cpu, rss = measured(["restic", "--quiet", "restore", "latest", "--target",
                                   str(target)], self.restic_env())
        summary = summarize(proxy.requests())
        self.trash.discard(target)
        return wall, cpu, rss, summary.requests, summary.waves


def _packages(checkout: Path) -> str:
    """A `PYTHONPATH` running another checkout's roam."""
    return os.pathsep.join(str(path) for path in sorted(checkout.glob("roam_*/src")))


def run_rtt(driver: Driver, proxy: LatencyProxy, runs: int, other: Path | None,
            restic: bool, show: bool) -> None:
    driver.url = proxy.url
    tools: dict[str, Callable[[], Run]] = {"roam": driver.roam_pull(proxy, None, show)}
    if other is not None:
        tools["roam-other"] = driver.roam_pull(proxy, _packages(other), False)
    if restic:
        tools["restic"] = lambda: driver.restore(proxy)
    results: dict[str, list[Run]] = {name: [] for name in tools}
    load = os.getloadavg()
    names = list(tools)
    for run in range(runs):
        for name in names if run % 2 == 0 else reversed(names):
            sample = tools[name]()
            results[name].append(sample)
            print(f"  run {run + 1} {name:10s} wall {sample[0]:6.2f} s  cpu {sample[1]:6.2f} s"
                  f"  rss {sample[2]:5.0f} MiB  requests {sample[3]:4d}  waves {sample[4]:3d}"
                  f"  load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"  load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    for name, samples in results.items():
        if not samples:
            continue
        print(f"  median {name:10s} wall {statistics.median(s[0] for s in samples):6.2f} s  "
              f"cpu {statistics.median(s[1] for s in samples):6.2f} s  "
              f"rss {max(s[2] for s in samples):5.0f} MiB  "
              f"requests {statistics.median(s[3] for s in samples):4.0f}  "
              f"waves {statistics.median(s[4] for s in samples):3.0f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/roam-bench-pull-s3"))
    parser.add_argument("--home", default="large", choices=sorted(homes.SPECS))
    parser.add_argument("--rtt-ms", default="0,40,100")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--other", type=Path, help="another checkout of roam to compare")
    parser.add_argument("--no-restic", action="store_true")
    parser.add_argument("--phases", type=int, default=0, metavar="N",
                        help="per RTT, first N pulls timing their phases and threads "
                             "(each followed by --other's)")
    parser.add_argument("--profile", type=Path, help="--phases: write a cProfile here")
    parser.add_argument("--timeline", action="store_true",
                        help="print each roam pull's requests with their waves")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    compile_roam()
    with s3_server() as server:
        driver = Driver(args.work, server, args.home)
        with latency_proxy(driver.port, 0.0) as proxy:
            driver.setup(proxy)
        for rtt in (float(value) / 1000 for value in args.rtt_ms.split(",")):
            print(f"RTT {rtt * 1000:.0f} ms", flush=True)
            with latency_proxy(driver.port, rtt / 2) as proxy:
                for _round in range(args.phases):
                    print("  phases of this checkout", flush=True)
                    driver.phases(proxy, args.profile)
                    if args.other is not None:
                        print(f"  phases of {args.other}", flush=True)
                        driver.phases(proxy, None, _packages(args.other))
                run_rtt(driver, proxy, args.runs, args.other, not args.no_restic,
                        args.timeline)
    driver.trash.empty()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
