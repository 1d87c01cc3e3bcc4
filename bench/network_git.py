"""The network scenarios on git: roam's git backend over smart HTTP behind a latency proxy.

    python3 -m uv run --all-packages python bench/network_git.py [--home small] [--runs 3]

`git http-backend` serves bare repositories on 127.0.0.1 (bench/git_server.py: request and
answer streamed, as git hosts do) behind a `netproxy.LatencyProxy` per round-trip time.
restic has no git backend, so it runs beside roam on its S3 backend against SeaweedFS behind
a second proxy at the same RTT: the same home, the same network, each tool's own protocol.
Per RTT: first push, status with nothing changed, an incremental push of 10 small new files,
and a new device's `init` + `pull --apply` into an empty home (on git `init` fetches the
branch, so it is timed with the pull) against `restic restore`, alternating who goes first.
The table goes into docs/benchmarks.md as a kept block, so bench/run.py carries it over.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import homes
import measure
from measure import Sample
from netproxy import LatencyProxy, Summary, git_operation, latency_proxy, summarize
from network import RTTS, NetResult, NetworkBench, s3_server
from network import table as network_table
from scenarios import Bench
from tools import Roam, compile_roam, ensure_restic

REPO = Path(__file__).resolve().parent.parent
#: The kept block in docs/benchmarks.md, one per home measured: `git-network-<home>`.
BLOCK = "git-network"
#: New small files per incremental push, and the folder they go to.
INCREMENTAL_FILES = 10
EDITED = "skills/git-bench/notes"
#: What the git scenarios do differently, in their titles.
RETITLED = {"incremental push": f"incremental push of {INCREMENTAL_FILES} small files",
            "pull --apply into an empty home": "init + pull --apply into an empty home"}


@contextlib.contextmanager
def git_server(root: Path) -> Iterator[int]:
    """Smart HTTP over `root`, both bodies streamed as a host streams them; yields its port."""
    from git_server import streaming_http

    with streaming_http(root) as port:
        yield port


class GitNetworkBench(NetworkBench):
    """roam on git through `git_proxy`; restic on S3 through the S3 proxy, same RTT."""

    def __init__(self, base: Bench, s3: object, s3_proxy: LatencyProxy, git_root: Path,
                 git_proxy: LatencyProxy, rtt: float) -> None:
        super().__init__(base, s3, s3_proxy, rtt)
        self.git_root = git_root
        self.git_proxy = git_proxy
        self.repo = self._new_repo()
        #: roam's git requests by operation class, summed over runs, per `counted` list
        self.by_class: dict[int, Counter[str]] = {}

    def _new_repo(self) -> Path:
        from support.git_remotes import bare_repo

        return bare_repo(self.git_root)

    def settings(self, name: str, device: str = "bench-a") -> dict[str, str]:
        return {"backend": "git", "git_remote": f"{self.git_proxy.url}/{self.repo.name}",
                "device_name": device}

    def roam(self, home: Path) -> Roam:
        return Roam(home)  # no S3 credentials: roam talks to git only

    def fresh_home(self, name: str) -> tuple[Path, Roam]:
        """The home pointed at a new empty repository; `init --create-remote` run."""
        self.repo = self._new_repo()
        return super().fresh_home(name)  # (its S3 prefix is not in this class's settings)

    def counted(self, into: list[Summary], step: Callable[[], Sample]) -> Callable[[], Sample]:
        """`step`, with the requests both proxies saw while it ran (one tool runs at a time)."""
        def run() -> Sample:
            self.proxy.reset()
            self.git_proxy.reset()
            sample = step()
            git = self.git_proxy.requests()
            into.append(summarize(self.proxy.requests() + git))
            self.by_class.setdefault(id(into), Counter()).update(map(git_operation, git))
            return sample
        return run

    def run_all(self, name: str) -> list[NetResult]:
        """The network scenarios with this class's edit and join; requests by class noted."""
        results = super().run_all(name)
        home = self.workdir / "homes" / name
        for path in home.glob(f"{EDITED}/git-bench-*.md"):  # the cached home as generated
            path.unlink()
        for result in results:
            classes = self.by_class.get(id(result.roam_requests), Counter())
            result.notes.append(", ".join(f"{kind} {count / self.runs:g}"
                                          for kind, count in sorted(classes.items())))
        return results

    def _result(self, key: str, title: str, name: str, target: str, ratio: float) -> NetResult:
        return super()._result(key.replace("N", "G"), RETITLED.get(title, title), name, target,
                               ratio)

    def edit(self, home: Path, listing: Path, run: int) -> None:
        """Ten small new files in one folder, added to restic's listing too."""
        added = [f"{EDITED}/git-bench-{run}-{n}.md" for n in range(INCREMENTAL_FILES)]
        for number, rel in enumerate(added):
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(f"# git network run {run}, note {number}\n")
        with listing.open("a") as handle:
            handle.writelines(f"{rel}\n" for rel in added)

    def join(self, name: str) -> Sample:
        """A new device's `init` (which fetches the branch) and `pull --apply`, timed as one."""
        other = self.second_device(name, init=False)
        device = self.roam(other)
        first = device("init")
        second = device("pull", "--apply")
        self.trash.discard(other)
        return Sample(first.wall + second.wall, max(first.rss_mib, second.rss_mib),
                      second.code, first.out + second.out, first.err + second.err)


def run_git_network(base: Bench, name: str, rtts: tuple[float, ...]) -> list[NetResult]:
    """Every git scenario of `name` at every RTT: one git server, one SeaweedFS."""
    results: list[NetResult] = []
    git_root = base.workdir / "git-remotes"
    shutil.rmtree(git_root, ignore_errors=True)
    git_root.mkdir(parents=True)
    with s3_server() as s3, git_server(git_root) as git_port:
        s3_port = int(s3.endpoint_url.rpartition(":")[2])  # type: ignore[attr-defined]
        for rtt in rtts:
            with latency_proxy(s3_port, rtt / 2) as s3_proxy, \
                    latency_proxy(git_port, rtt / 2) as git_proxy:
                bench = GitNetworkBench(base, s3, s3_proxy, git_root, git_proxy, rtt)
                results.extend(bench.run_all(name))
    shutil.rmtree(git_root, ignore_errors=True)
    return results


def section(results: list[NetResult], command: str, load: tuple[str, str], name: str,
            runs: int) -> str:
    """The kept block for docs/benchmarks.md."""
    spec = homes.SPECS[name]
    return "\n".join([
        f"<!-- kept:{BLOCK}-{name} -->", "",
        f"## Over a network: git (smart HTTP) behind a latency proxy, `{name}` home", "",
        f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{runs} run(s) per cell, "
        f"medians; the `{name}` home ({spec.files:,} files); load average at start / end "
        f"{load[0]} / {load[1]} (2 cores shared with eight other sessions, so absolute "
        "times are inflated). roam's git backend talks to `git http-backend` on 127.0.0.1 "
        "through `bench/netproxy.py` (half the RTT per direction, one extra RTT per new "
        "connection, every HTTP request counted). restic has no git backend: it runs its S3 "
        "backend against SeaweedFS behind a second proxy at the same RTT, same home. The "
        "git pull row times a new device's `roam init` and `pull --apply` together, because "
        "on git `init` already fetches the branch. Requests are HTTP requests per run; "
        "tests/backend_git/test_git_requests.py asserts them by class.", "",
        network_table(results), "",
        "roam's git requests per run by class (GET info/refs = `advertise`, upload-pack "
        "POSTs = `ls-refs` / `fetch`, `receive-pack` = the push):", "",
        *(f"- {r.title.split(' (')[0]}, {r.rtt * 1000:.0f} ms: {r.notes[-1]}"
          for r in results), "",
        "What bounds each scenario on git:", "",
        "- first push: one look (GET info/refs + `ls-refs`) and one `receive-pack` POST "
        "carrying every object of the generation (git sends a small probe POST first "
        "when the pack is larger than its `http.postBuffer`, 1 MiB: hence 2 "
        "`receive-pack` on any real home), so RTT adds a fixed ~4 round trips, not one "
        "per object. The rest is processor time: roam's packing and sealing, the one "
        "pack roam writes into the mirror for the commit (hashlib SHA-1, no git process "
        "per object), git's `pack-objects` copying its entries into the push, and the "
        "receiving `index-pack` hashing every object again (on the same 2 cores here).",
        "- status, nothing changed: one look (info/refs + `ls-refs`, one `git "
        "ls-remote`), the tip compared with the one already fetched; the rest is the "
        "CLI's start-up and the home's scan.",
        "- incremental push: the same one look and one `receive-pack` as a first push, "
        "with a pack of just the new objects.",
        "- init + pull into an empty home: init's reachability look (`git ls-remote`, "
        "capped so a blackholed remote fails in seconds), then one `git fetch` of the "
        "tip that look saw (2 advertisements / 2 `ls-refs` / 1 `fetch` in all, counted "
        "by the test); the fetch's `index-pack` hashes and writes the whole pack; then "
        "`pull --apply` looks once and reads every object straight from the fetched "
        "pack (no `git cat-file` per object); the rest is roam's own work (writing "
        "20,000 files through the journal).", "",
        f"<!-- /kept:{BLOCK}-{name} -->"])


def write_block(page: Path, block: str, mark: str) -> None:
    """Replace the kept block `mark` (`<!-- kept:MARK -->`…) in `page`, or append it."""
    text = page.read_text()
    pattern = re.compile(rf"<!-- kept:{mark} -->.*?<!-- /kept:{mark} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _match: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    page.write_text(text.rstrip("\n") + "\n")


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def new_bench(workdir: Path, runs: int) -> Bench:
    """restic found, roam compiled, `workdir` made: a `Bench` that reports on stderr."""
    workdir.mkdir(parents=True, exist_ok=True)
    restic_binary = ensure_restic()
    compile_roam()
    return Bench(workdir, restic_binary, runs, say)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", choices=sorted(homes.SPECS), default="small")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[r * 1000 for r in RTTS])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench-git"))
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md",
                        help="the page whose git block is rewritten")
    args = parser.parse_args()
    load_start = measure.loadavg()
    base = new_bench(args.workdir, args.runs)
    try:
        results = run_git_network(base, args.home, tuple(ms / 1000 for ms in args.rtt_ms))
    finally:
        base.trash.empty()
        for folder in ("restic", "restic-cache", "restore", "device-b"):
            shutil.rmtree(args.workdir / folder, ignore_errors=True)
    command = "python bench/network_git.py " + " ".join(sys.argv[1:])
    block = section(results, command.strip(), (load_start, measure.loadavg()), args.home,
                    args.runs)
    write_block(args.out, block, f"{BLOCK}-{args.home}")
    print(network_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
