"""Where roam's git operations spend their time: git children, roam, the server, the requests.

    python3 -m uv run --all-packages python bench/git_breakdown.py [--rtt-ms 100] [--home large]

One device pushes the bench home to a fresh smart-HTTP remote (bench/git_server.py, streamed)
behind `netproxy.LatencyProxy`, checks status, pushes 10 small new files, then a second
device runs `init` and `pull --apply`. Per step it prints the wall time, the processor time of
roam and every git process it ran (`RUSAGE_CHILDREN`), the server's processor time (the
smart-HTTP front and its `git http-backend` children, from /proc), every HTTP request with
its timing, and each git command's wall time by name and depth from git's own trace2 events
(`GIT_TRACE2_EVENT`, which roam's allowlisted child environment passes on).

Processor times are the robust numbers on a loaded machine. For an A/B of two versions of the
backend, run it alternately with `PYTHONPATH=<other checkout>/roam_backend_git/src` (the roam
CLI subprocesses inherit it, so only the backend changes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import homes
from measure import Sample
from netproxy import LatencyProxy, git_operation, latency_proxy, summarize
from procwatch import ProcWatch, label
from tools import Roam

#: New small files of the incremental push, and the folder they go to.
INCREMENTAL_FILES = 10
EDITED = "skills/git-bench/notes"


def git_times(trace: Path) -> tuple[dict[str, float], Counter[str]]:
    """Wall seconds and count per git command (indented by depth) from a trace2 event file."""
    seconds: dict[str, float] = defaultdict(float)
    counts: Counter[str] = Counter()
    names: dict[str, str] = {}
    if not trace.exists():
        return seconds, counts
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        sid = event.get("sid", "")
        if event["event"] == "cmd_name":
            names[sid] = event["name"]
        elif event["event"] == "exit":
            key = "  " * sid.count("/") + names.get(sid, "?")
            seconds[key] += event["t_abs"]
            counts[key] += 1
    return seconds, counts


def timeline(trace: Path, stamp: float) -> list[tuple[float, float, str]]:
    """(start after `stamp`, wall, name) of each top-level git command, from trace2."""
    from datetime import datetime

    starts: dict[str, float] = {}
    names: dict[str, str] = {}
    out = []
    if not trace.exists():
        return out
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        sid = event.get("sid", "")
        if "/" in sid:
            continue
        if event["event"] == "start":
            starts[sid] = datetime.fromisoformat(
                event["time"].replace("Z", "+00:00")).timestamp() - stamp
        elif event["event"] == "cmd_name":
            names[sid] = event["name"]
        elif event["event"] == "exit":
            out.append((starts.get(sid, 0.0), event["t_abs"], names.get(sid, "?")))
    return sorted(out)


def server_pid(marker: str) -> int | None:
    """The smart-HTTP server serving `marker`."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found = cmdline.read_bytes()
        except OSError:
            continue
        if b"git_server.py" in found and marker.encode() in found:
            return int(cmdline.parent.name)
    return None


def server_cpu(marker: str) -> float:
    """Processor seconds of the server process(es) whose command line holds `marker`."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"git_server.py" not in (found := cmdline.read_bytes()) \
                    or marker.encode() not in found:
                continue
            fields = (cmdline.parent / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / tick  # utime stime cutime cstime
    return total


class Steps:
    """Runs roam steps and prints what each cost."""

    def __init__(self, proxy: LatencyProxy, work: Path) -> None:
        self.proxy = proxy
        self.work = work
        self.trace = work / "trace2.json"

    def run(self, label: str, roam: Roam, *args: str) -> Sample:
        self.trace.unlink(missing_ok=True)
        self.proxy.reset()
        roam.env["GIT_TRACE2_EVENT"] = str(self.trace)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_before = server_cpu(str(self.work))
        watch = ProcWatch().start()
        started = time.monotonic()
        stamp = time.time()
        sample = roam(*args)
        wall = time.monotonic() - started
        watch.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        server = server_cpu(str(self.work)) - server_before
        requests = self.proxy.requests()
        classes = dict(Counter(map(git_operation, requests)))
        print(f"== {label}: wall {wall:.2f}s cpu(all children) {cpu:.2f}s server cpu "
              f"{server:.2f}s code {sample.code} requests {classes} "
              f"waves {summarize(requests).waves}")
        for request in requests:
            took = (request.ended or request.started) - request.started
            print(f"     {request.method} {request.target[-40:]} body {request.body} "
                  f"{request.body_head[:20]!r} {request.started:.2f} ({took:.2f}s)")
        seconds, counts = git_times(self.trace)
        for key in sorted(seconds, key=lambda name: -seconds[name])[:14]:
            print(f"   git {key:<30} x{counts[key]:<5} {seconds[key]:.2f}s")
        top = [key for key in seconds if not key.startswith(" ")]
        print(f"   git top-level total {sum(seconds[k] for k in top):.2f}s in "
              f"{sum(counts[k] for k in top)} processes", flush=True)
        for at, took, name in timeline(self.trace, stamp):
            if took >= 0.05:
                print(f"   at {at:6.2f}s  {took:6.2f}s  {name}")
        self.per_process(watch)
        return sample

    def per_process(self, watch: ProcWatch) -> None:
        """Processor time and VmHWM per program, on roam's side and on the server's."""
        server = server_pid(str(self.work))
        served = {p.pid for p in watch.under(server)} if server else set()
        sides: dict[str, dict[str, list[float]]] = {"roam": {}, "server": {}}
        for proc in [*watch.under(os.getpid()), *(p for p in watch.under(server or 0)
                                                   if p.pid in served)]:
            side = sides["server" if proc.pid in served else "roam"]
            row = side.setdefault(label(proc), [0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += proc.cpu
            row[2] = max(row[2], proc.hwm_mib)
            row[3] = max(row[3], proc.anon_mib)
        for name, side in sides.items():
            total = sum(row[1] for row in side.values())
            print(f"   {name} side: {total:.2f}s processor (sampled)")
            for prog, (n, cpu, hwm, anon) in sorted(side.items(), key=lambda kv: -kv[1][1]):
                if cpu >= 0.02 or hwm >= 50:
                    print(f"     {prog:<24} x{n:<4} cpu {cpu:6.2f}s  VmHWM {hwm:7.1f} MiB"
                          f"  (anonymous, sampled {anon:6.1f} MiB)")


def main() -> int:
    from git_server import streaming_http

    from support.git_remotes import bare_repo

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt-ms", type=float, default=100.0)
    parser.add_argument("--home", choices=sorted(homes.SPECS), default="large")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench-git"),
                        help="holds the generated home (shared with network_git.py)")
    args = parser.parse_args()
    work = args.workdir / "breakdown"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print("load " + " ".join(f"{value:.2f}" for value in os.getloadavg()))
    with streaming_http(work) as port:
        repo = bare_repo(work, "store.git")
        with latency_proxy(port, args.rtt_ms / 2000) as proxy:
            steps = Steps(proxy, work)
            settings = {"backend": "git", "git_remote": f"{proxy.url}/{repo.name}",
                        "device_name": "a"}
            home = homes.generate(homes.SPECS[args.home],
                                  args.workdir / "homes" / args.home, settings)
            if (home / "roam").exists():
                (home / "roam").rename(work / "earlier-roam")
            first = Roam(home)
            steps.run("init --create-remote", first, "init", "--create-remote")
            steps.run("first push", first, "push")
            steps.run("status", first, "status")
            added = [home / EDITED / f"breakdown-{n}.md" for n in range(INCREMENTAL_FILES)]
            for number, path in enumerate(added):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"note {number} {time.time()}\n")
            steps.run("incremental push", first, "push")
            for path in added:
                path.unlink()
            other = work / "device-b"
            other.mkdir()
            lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
            lines += [f"        {k}: {v}" for k, v in {**settings, "device_name": "b"}.items()]
            (other / "config.yaml").write_text("\n".join(lines) + "\n")
            second = Roam(other)
            steps.run("init (new device)", second, "init")
            steps.run("pull --apply", second, "pull", "--apply")
            (home / "roam").rename(work / "bench-roam")
            if (work / "earlier-roam").exists():
                (work / "earlier-roam").rename(home / "roam")
    print("load " + " ".join(f"{value:.2f}" for value in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
