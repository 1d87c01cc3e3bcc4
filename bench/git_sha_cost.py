"""What git's own hashing costs per transfer of a roam store: the floor under git push and fetch.

    python3 -m uv run --all-packages python bench/git_sha_cost.py [--repo DIR] [--runs 3]

`--repo` is a bare repository holding a pushed roam store (bench/git_breakdown.py leaves one
at /tmp/roam-bench-git/breakdown/store.git). Per run, the processor time
(`RUSAGE_CHILDREN`) of the two git programs every transfer runs, on its largest pack:

- `index-pack --stdin --fix-thin`: what a fetch runs on the client and a push on the server
  (git's collision-detecting SHA-1 over every object, then over the whole pack, and the write);
- `pack-objects --revs --stdout` of the branch with roam's settings (no delta search, level 0):
  what a push runs on the client and a fetch on the server (the entries copied as they are,
  one SHA-1 over the stream);

and, for scale, one SHA-1 pass over the same bytes with hashlib (what roam's own staging
pays per pass). Processor time, not wall time: the numbers hold on a loaded machine. The
result replaces this script's kept block (`git-sha-cost`) of `--out` (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import kept_blocks

REPO = Path(__file__).resolve().parent.parent
#: This script's kept block in docs/benchmarks.md.
BLOCK = "git-sha-cost"

#: roam's git settings for a push (roam_backend_git/runner.py BASE_CONFIG).
ROAM_CONFIG = ("-c", "core.compression=0", "-c", "pack.window=0")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], stdin: Path | None = None, input: bytes | None = None) -> float:
    """Processor seconds of `argv` and its children (its output discarded)."""
    before = children_cpu()
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as source:
        subprocess.run(argv, stdin=source if input is None else None, input=input,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
                       timeout=1800)
    return children_cpu() - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path,
                        default=Path("/tmp/roam-bench-git/breakdown/store.git"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md",
                        help="the page whose git-sha-cost block is rewritten")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    packs = sorted((args.repo / "objects" / "pack").glob("pack-*.pack"),
                   key=lambda path: path.stat().st_size)
    if not packs:
        print(f"git_sha_cost: no pack in {args.repo} (run bench/git_breakdown.py first)",
              file=sys.stderr)
        return 1
    pack = packs[-1]
    size = pack.stat().st_size
    branch = subprocess.run(["git", f"--git-dir={args.repo}", "for-each-ref",
                             "--format=%(refname)", "refs/heads/"], capture_output=True,
                            check=True, text=True).stdout.split()[0]
    version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    print(f"load {load_start:.2f}; {pack.name}: {size / 2**20:.0f} MiB; "
          f"{version.strip()}")
    found: dict[str, list[float]] = {"index-pack": [], "pack-objects": [], "hashlib": []}
    for _run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="roam-sha-cost-") as scratch:
            subprocess.run(["git", "init", "-q", "--bare", scratch], check=True)
            found["index-pack"].append(timed(
                ["git", f"--git-dir={scratch}", "index-pack", "--stdin", "--fix-thin"],
                stdin=pack))
        found["pack-objects"].append(timed(
            ["git", *ROAM_CONFIG, f"--git-dir={args.repo}", "pack-objects", "--revs",
             "--stdout", "--delta-base-offset", "-q"], input=f"{branch}\n".encode()))
        data = pack.read_bytes()
        started = time.process_time()
        hashlib.sha1(data, usedforsecurity=False).digest()
        found["hashlib"].append(time.process_time() - started)
        del data
    medians = {name: statistics.median(seconds) for name, seconds in found.items()}
    for name, seconds in found.items():
        print(f"{name:<13} median {medians[name]:.2f} s processor time "
              f"({', '.join(f'{value:.2f}' for value in seconds)}; "
              f"{size / 2**20 / medians[name]:.0f} MiB/s)")
    command = "python bench/git_sha_cost.py " + " ".join(sys.argv[1:])
    block = section(command.strip(), found, medians, size, version.strip(),
                    (load_start, os.getloadavg()[0]))
    page = args.out.read_text() if args.out.exists() else ""
    old = kept_blocks(page).get(BLOCK)
    page = page.replace(old, block, 1) if old else page.rstrip("\n") + "\n\n" + block + "\n"
    args.out.write_text(page)
    return 0


def section(command: str, found: dict[str, list[float]], medians: dict[str, float],
            size: int, version: str, load: tuple[float, float]) -> str:
    """The kept block: the table and what it bounds."""
    mib = size / 2**20

    def cell(name: str) -> str:
        runs = ", ".join(f"{value:.2f}" for value in found[name])
        return f"{medians[name]:.2f} s ({runs}) | {mib / medians[name]:,.0f} MiB/s"

    transfer = medians["index-pack"] + medians["pack-objects"]
    per_pass = mib / (medians["index-pack"] / 2)  # index-pack hashes the bytes twice
    return "\n".join([
        f"<!-- kept:{BLOCK} -->", "",
        "## git's own hashing: the floor under a push and a fetch on git", "",
        f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{len(found['hashlib'])} run(s), medians; {version}; load average {load[0]:.2f} at "
        f"the start, {load[1]:.2f} at the end (processor time, `RUSAGE_CHILDREN`: it holds "
        f"on a loaded machine). The store's largest pack, {mib:,.0f} MiB, through the two "
        "programs every git transfer runs:", "",
        "| program | who runs it | processor time | rate |",
        "|---|---|---:|---:|",
        "| `git index-pack --stdin` (SHA-1 per object, SHA-1 of the pack, the write) | a "
        f"fetch's client, a push's server | {cell('index-pack')} |",
        "| `git pack-objects --stdout`, roam's settings (entries copied, SHA-1 of the "
        f"stream) | a push's client, a fetch's server | {cell('pack-objects')} |",
        "| hashlib SHA-1, one pass (roam's own staging hash) | roam | "
        f"{cell('hashlib')} |", "",
        "What this bounds on git (issue 22's two git misses; the requests are already a fixed "
        "handful per operation, tests/backend_git/test_git_requests.py):", "",
        f"- init + pull: one `git fetch` of the whole store costs {transfer:.1f} s of "
        f"processor time in these two programs (≥ {transfer / 2:.1f} s on 2 cores) before "
        "roam can read a byte: git shows objects only once `index-pack` has indexed the "
        "whole pack. Then comes roam's own core pull, the same as on S3.",
        "- first push: after the packing, the same two programs over every byte "
        f"({transfer:.1f} s; the `index-pack` part on the server, which on a real host runs "
        "on the host's cores, here on the same two). On S3 the uploads overlap the packing; "
        "on git they cannot without more pushes (more requests): a pack's header carries "
        "its object count, so the push starts after the last object is known.",
        f"- git hashes with its collision-detecting SHA-1 at ~{per_pass:,.0f} MiB/s a pass "
        f"here, hashlib at {mib / medians['hashlib']:,.0f} MiB/s. What would close both: "
        "roam not running git over the bytes (speaking git's protocol v2 itself, through "
        "`git remote-http`'s `stateless-connect` or `git upload-pack` over ssh, and "
        "indexing the pack with hashlib), or an S3 store.", "",
        f"<!-- /kept:{BLOCK} -->"])


if __name__ == "__main__":
    sys.exit(main())
