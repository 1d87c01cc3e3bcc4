"""The network scenarios: roam and restic on one S3 server behind a latency proxy.

SeaweedFS (`weed mini`, real signature checks and conditional writes) runs on 127.0.0.1; each
round-trip time gets its own `netproxy.LatencyProxy` in front of it (half the RTT per
direction, one extra RTT per new connection, every request counted). roam uses its S3
backend, restic its S3 backend, against the same server. Per RTT: first push vs. first
backup, status with nothing changed vs. a no-change backup, incremental push vs. backup, and
`pull --apply` into an empty home vs. `restic restore`, alternating who goes first. Each
sample carries the requests the proxy saw while it ran.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import homes
from measure import Sample
from netproxy import LatencyProxy, Summary, latency_proxy
from scenarios import Bench, Result
from tools import Restic, Roam, Trash

TESTS = Path(__file__).resolve().parent.parent / "tests"
#: Round-trip times measured (seconds): loopback, a nearby region, another continent.
RTTS = (0.0, 0.040, 0.100)


@dataclass
class NetResult(Result):
    """A scenario at one RTT, with the requests each tool made per run."""

    rtt: float = 0.0
    roam_requests: list[Summary] = field(default_factory=list)
    restic_requests: list[Summary] = field(default_factory=list)

    def requests(self, tool: str) -> str:
        found = self.roam_requests if tool == "roam" else self.restic_requests
        if not found:
            return "–"
        return f"{statistics.median(s.requests for s in found):.0f}"

    def waves(self) -> str:
        if not self.roam_requests:
            return "–"
        return f"{statistics.median(s.waves for s in self.roam_requests):.0f}"


@contextlib.contextmanager
def s3_server() -> Iterator[object]:
    """SeaweedFS as the tests start it (tests/support/s3_servers.py), stopped by its PID."""
    sys.path.insert(0, str(TESTS))
    from support.s3_servers import seaweedfs_server

    with seaweedfs_server("bench-access", "bench-secret-0c3f") as server:
        yield server


class S3Restic(Restic):
    """restic's S3 backend on the bench's server, a fresh repository per `init`."""

    def __init__(self, binary: str, url: str, bucket: str, name: str, cache: Path,
                 trash: Trash, credentials: dict[str, str]) -> None:
        super().__init__(binary, cache.parent / "restic" / name, cache, trash)
        self.url, self.bucket, self.name = url, bucket, name
        self.count = 0
        self.env.update(credentials)
        self._point()

    def _point(self) -> None:
        self.env["RESTIC_REPOSITORY"] = f"s3:{self.url}/{self.bucket}/restic-{self.name}-" \
                                        f"{self.count}"

    def init(self) -> None:
        self.count += 1
        self._point()
        self("init")


class NetworkBench(Bench):
    """The scenarios of `Bench` on S3 through a latency proxy; one instance per RTT."""

    def __init__(self, base: Bench, server: object, proxy: LatencyProxy, rtt: float) -> None:
        super().__init__(base.workdir, base.restic_binary, base.runs, base.say)
        self.trash = base.trash
        self.server = server
        self.proxy = proxy
        self.rtt = rtt
        self.bucket = server.fresh_bucket()  # type: ignore[attr-defined]
        self.prefix = "roam-0"
        self.pushes = 0
        self.credentials = {"AWS_ACCESS_KEY_ID": server.access_key_id,  # type: ignore[attr-defined]
                            "AWS_SECRET_ACCESS_KEY": server.secret_access_key}  # type: ignore[attr-defined]

    def settings(self, name: str, device: str = "bench-a") -> dict[str, str]:
        return {"backend": "s3", "s3_bucket": self.bucket, "s3_prefix": self.prefix,
                "s3_endpoint_url": self.proxy.url, "s3_region": "us-east-1",
                "device_name": device}

    def roam(self, home: Path) -> Roam:
        roam = Roam(home)
        roam.env.update({"ROAM_S3_ACCESS_KEY_ID": self.credentials["AWS_ACCESS_KEY_ID"],
                         "ROAM_S3_SECRET_ACCESS_KEY": self.credentials["AWS_SECRET_ACCESS_KEY"]})
        return roam

    def restic(self, name: str) -> S3Restic:
        return S3Restic(self.restic_binary, self.proxy.url, self.bucket, name,
                        self.workdir / "restic-cache", self.trash, self.credentials)

    def _result(self, key: str, title: str, name: str, target: str, ratio: float) -> NetResult:
        rtt = f"{self.rtt * 1000:.0f} ms"
        return NetResult(key, f"{title} (`{name}`, RTT {rtt})", name, target,
                         ratio_target=ratio, rtt=self.rtt)

    def counted(self, into: list[Summary], step: Callable[[], Sample]) -> Callable[[], Sample]:
        """`step`, with the requests the proxy saw while it ran appended to `into`."""
        def run() -> Sample:
            self.proxy.reset()
            sample = step()
            into.append(self.proxy.summary())
            return sample
        return run

    def fresh_home(self, name: str) -> tuple[Path, Roam]:
        """The home with settings for a new, empty store prefix; `init --create-remote` run."""
        self.pushes += 1
        self.prefix = f"roam-{name}-{self.pushes}"
        home = homes.generate(homes.SPECS[name], self.workdir / "homes" / name,
                              self.settings(name))
        self.trash.discard(home / "roam")
        roam = self.roam(home)
        roam("init", "--create-remote")
        return home, roam

    def run_all(self, name: str) -> list[NetResult]:
        """First push, status, incremental push and pull of `name` at this RTT."""
        home = self.home(name)  # generated once, cached; listing for restic
        listing = self.workdir / f"{name}.files"
        restic = self.restic(name)
        results = [self.first_pushes(name, home, listing, restic),
                   self.statuses(name, home, listing, restic),
                   self.incrementals(name, home, listing, restic),
                   self.pulls(name, restic)]
        for result in results:
            result.notes.append(f"requests per run, roam / restic: {result.requests('roam')} / "
                                f"{result.requests('restic')}; roam's waves (round trips "
                                f"waited one after another): {result.waves()}")
        return results

    def first_pushes(self, name: str, home: Path, listing: Path, restic: Restic) -> NetResult:
        """A fresh store's first push against restic's first backup, `runs` times."""
        push = self._result("N2", "first push", name, "≤ 1.0× restic backup", 1.0)
        for run in range(self.runs):
            self.say(f"network {self.rtt * 1000:.0f} ms, first push ({name}): run {run + 1}")

            def roam_step() -> Sample:
                _home, fresh = self.fresh_home(name)
                return self.counted(push.roam_requests, lambda: fresh("push", "--quiet"))()

            def restic_step() -> Sample:
                restic.init()
                return self.counted(push.restic_requests,
                                    lambda: restic.backup(home, listing))()

            self.pair(push, roam_step, restic_step, run)
        return push

    def statuses(self, name: str, home: Path, listing: Path, restic: Restic) -> NetResult:
        """`status` with nothing changed against a no-change backup."""
        roam = self.roam(home)
        status = self._result("N1", "status, nothing changed", name, "≤ 0.3× restic", 0.3)
        roam("status")
        time.sleep(2.5)  # the remembered status trusts only changes older than 2 s
        roam("status")
        for run in range(self.runs):
            self.pair(status, self.counted(status.roam_requests, lambda: roam("status")),
                      self.counted(status.restic_requests,
                                   lambda: restic.backup(home, listing)), run)
        return status

    def edit(self, home: Path, listing: Path, run: int) -> None:
        """What changes before each incremental push: one skill edited, one memory added."""
        edited = next(rel for rel in homes.shared_paths(home) if rel.endswith("SKILL.md"))
        with (home / edited).open("a") as handle:
            handle.write(f"\nedited in network run {run}\n")
        with (home / "memories" / "MEMORY.md").open("a") as handle:
            handle.write(f"§ network run {run}: the user prefers tea\n")

    def incrementals(self, name: str, home: Path, listing: Path, restic: Restic) -> NetResult:
        """An incremental push after `edit` against restic's backup of the same change."""
        roam = self.roam(home)
        incremental = self._result("N3", "incremental push", name, "≤ 0.5× restic", 0.5)
        for run in range(self.runs):
            self.say(f"network {self.rtt * 1000:.0f} ms, incremental ({name}): run {run + 1}")
            self.edit(home, listing, run)
            self.pair(incremental,
                      self.counted(incremental.roam_requests, lambda: roam("push", "--quiet")),
                      self.counted(incremental.restic_requests,
                                   lambda: restic.backup(home, listing)), run)
        return incremental

    def join(self, name: str) -> Sample:
        """The timed part of a new device's pull: `pull --apply` (init is untimed)."""
        other = self.second_device(name)
        sample = self.roam(other)("pull", "--apply")
        self.trash.discard(other)
        return sample

    def pulls(self, name: str, restic: Restic) -> NetResult:
        """`join` into an empty home against `restic restore`."""
        pull = self._result("N4", "pull --apply into an empty home", name,
                            "≤ 1.0× restic restore", 1.0)
        target = self.workdir / "restore"
        for run in range(self.runs):
            self.say(f"network {self.rtt * 1000:.0f} ms, pull ({name}): run {run + 1}")

            def restore_step() -> Sample:
                self.trash.discard(target)
                sample = self.counted(pull.restic_requests, lambda: restic(
                    "restore", "latest", "--target", str(target)))()
                self.trash.discard(target)
                return sample

            self.pair(pull, self.counted(pull.roam_requests, lambda: self.join(name)),
                      restore_step, run)
        return pull


def run_network(base: Bench, name: str, rtts: tuple[float, ...] = RTTS) -> list[NetResult]:
    """Every network scenario of `name` at every RTT, on one SeaweedFS."""
    results: list[NetResult] = []
    with s3_server() as server:
        port = int(server.endpoint_url.rpartition(":")[2])  # type: ignore[attr-defined]
        for rtt in rtts:
            with latency_proxy(port, rtt / 2) as proxy:
                results.extend(NetworkBench(base, server, proxy, rtt).run_all(name))
    return results


def table(results: list[NetResult]) -> str:
    """The network results in Markdown, with request counts."""
    lines = ["| scenario | RTT | roam median (s) | restic median (s) | roam/restic | requests "
             "roam / restic | roam waves | target | met |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in results:
        ratio = "–" if r.ratio != r.ratio else f"{r.ratio:.2f}×"
        lines.append(
            f"| {r.title.split(' (')[0]} | {r.rtt * 1000:.0f} ms | {r.roam.median:.2f} | "
            f"{r.restic.median:.2f} | {ratio} | {r.requests('roam')} / {r.requests('restic')} "
            f"| {r.waves()} | {r.target} | {'yes' if r.met else '**no**'} |")
    return "\n".join(lines)
