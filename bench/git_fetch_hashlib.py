"""Prototype, end to end: roam fetching a git branch itself, the pack indexed with hashlib.

    python3 -m uv run --all-packages python bench/git_fetch_hashlib.py STORE.git [--runs 3]
        [--rtt-ms 0]

What closing init's `git fetch` would give (issue 22): STORE.git (a bare repository holding a
roam branch, e.g. the one bench/git_breakdown.py leaves in `<workdir>/breakdown/store.git`)
is served by bench/git_server.py behind bench/netproxy.py, and two fetches of its branch into
a fresh bare repository alternate:

- `git fetch` as roam runs it (mirror.py: `fetch.unpackLimit=1`), `index-pack` hashing every
  object with git's collision-detecting SHA-1;
- roam's own: one protocol-v2 `fetch` POST over HTTP (`want <tip>`, `done`), the side-band
  demultiplexed as it arrives, the pack written into `objects/pack` and indexed on the way by
  bench/git_index_hashlib.py's `index_stream` (hashlib SHA-1, git's trees' deltas resolved,
  the trailing checksum checked), fsynced, the index written, both renamed into place, the
  ref set, then `git rev-list --objects` over the tip (git's own fetch checks connectivity
  the same way). It runs as a child process, so both sides' processor time is a child's.

Printed per run: wall and processor time of each; at the end medians, and whether the two
indexes are byte-identical. The prototype of what the backend now does itself for a new
device's first fetch (roam_backend_git/ownfetch.py, over smart HTTP through `git
remote-http`'s stateless-connect and over a local path through `git upload-pack`); kept to
measure the protocol and the indexer without the helper in between.
"""

from __future__ import annotations

import argparse
import http.client
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from git_index_hashlib import index_stream
from git_server import streaming_http
from netproxy import latency_proxy

BRANCH = "refs/heads/roam"
TRACKING = "refs/roam/tip"


def pkt(payload: bytes) -> bytes:
    """One pkt-line: four hex digits of length (themselves included), then the payload."""
    return b"%04x" % (len(payload) + 4) + payload


class SideBand:
    """The pack's bytes from a protocol-v2 fetch answer: band 1 of the `packfile` section."""

    def __init__(self, answer: http.client.HTTPResponse) -> None:
        self.answer = answer
        self.done = False
        first = self._line()
        if first != b"packfile\n":
            raise RuntimeError(f"expected the packfile section, got {first!r}")

    def _line(self) -> bytes | None:
        head = self.answer.read(4)
        if len(head) != 4:
            raise RuntimeError("the answer ended inside a pkt-line")
        size = int(head, 16)
        if size < 4:
            return None  # flush, delimiter or end of response
        return self.answer.read(size - 4)

    def read(self, _wanted: int) -> bytes:
        """The next piece of the pack (b"" at its end); progress lines are skipped."""
        while not self.done:
            line = self._line()
            if line is None:
                self.done = True
                break
            if line[:1] == b"\x01":
                return line[1:]
            if line[:1] == b"\x03":
                raise RuntimeError(f"the server failed: {line[1:].decode(errors='replace')}")
        return b""


def receive(url: str, tip: str, repo: Path) -> None:
    """Fetch `tip` from the smart-HTTP repository at `url` into the bare `repo`, ourselves."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    body = (pkt(b"command=fetch\n") + b"0001" + pkt(b"ofs-delta\n") + pkt(b"no-progress\n")
            + pkt(b"want %s\n" % tip.encode()) + pkt(b"done\n") + b"0000")
    connection.request("POST", parts.path.rstrip("/") + "/git-upload-pack", body, {
        "Content-Type": "application/x-git-upload-pack-request",
        "Accept": "application/x-git-upload-pack-result", "Git-Protocol": "version=2"})
    answer = connection.getresponse()
    if answer.status != 200:
        raise RuntimeError(f"upload-pack answered {answer.status}")
    band = SideBand(answer)
    packs = repo / "objects" / "pack"
    temp = packs / f"tmp_roam_fetch_{os.getpid()}.pack"
    with open(temp, "wb") as sink:
        def read(wanted: int) -> bytes:
            piece = band.read(wanted)
            sink.write(piece)
            return piece

        index, _size = index_stream(read)
        sink.flush()
        os.fsync(sink.fileno())  # as index-pack fsyncs the packs it writes
    connection.close()
    name = packs / f"pack-{index[-40:-20].hex()}"
    idx_temp = temp.with_suffix(".idx")
    with open(idx_temp, "wb") as out:
        out.write(index)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, name.with_suffix(".pack"))
    os.replace(idx_temp, name.with_suffix(".idx"))
    git = ["git", f"--git-dir={repo}"]
    subprocess.run([*git, "rev-list", "--objects", "--quiet", tip], check=True)
    subprocess.run([*git, "update-ref", TRACKING, tip], check=True)


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _fresh(work: Path, run: int, side: str) -> Path:
    repo = work / f"{side}-{os.getpid()}-{run}.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--template=", str(repo)], check=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rtt-ms", type=float, default=0.0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/roam-bench-git-fetch"))
    parser.add_argument("--receive", nargs=3, metavar=("URL", "TIP", "REPO"),
                        help=argparse.SUPPRESS)  # the child process: one fetch by roam
    args = parser.parse_args()
    if args.receive:
        receive(args.receive[0], args.receive[1], Path(args.receive[2]))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    store = args.store.resolve()
    print(f"load {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    spent: dict[str, list[tuple[float, float]]] = {"git fetch": [], "roam + hashlib": []}
    same: list[bool] = []
    with streaming_http(store.parent) as port, \
            latency_proxy(port, args.rtt_ms / 2000) as proxy:
        url = f"{proxy.url}/{store.name}"
        tip = subprocess.run(["git", "ls-remote", url, BRANCH], check=True, capture_output=True,
                             text=True).stdout.split()[0]
        for run in range(args.runs):
            made: dict[str, Path] = {}
            order = list(spent) if run % 2 == 0 else list(reversed(spent))
            for side in order:
                repo = made[side] = _fresh(args.work, run, side.split()[0])
                if side == "git fetch":
                    argv = ["git", f"--git-dir={repo}", "-c", "fetch.unpackLimit=1", "fetch",
                            "--quiet", "--no-tags", url, f"+{BRANCH}:{TRACKING}"]
                else:
                    argv = [sys.executable, __file__, str(store), "--receive", url, tip,
                            str(repo)]
                os.sync()
                before, started = _children(), time.monotonic()
                subprocess.run(argv, check=True)
                wall, cpu = time.monotonic() - started, _children() - before
                spent[side].append((wall, cpu))
                print(f"  run {run + 1} {side}: {wall:.2f} s wall, {cpu:.2f} s processor "
                      f"(this side; the server's and the proxy's not counted), load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
            indexes = [sorted((made[side] / "objects" / "pack").glob("*.idx")) for side in spent]
            same.append([p.read_bytes() for p in indexes[0]] == [p.read_bytes()
                                                                 for p in indexes[1]])
    for side, samples in spent.items():
        print(f"{side}: median {statistics.median(w for w, _ in samples):.2f} s wall, "
              f"{statistics.median(c for _, c in samples):.2f} s processor")
    print(f"indexes byte-identical in {sum(same)} of {len(same)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
