"""What would close the git misses: each operation's two halves run at once, measured.

    python3 -m uv run --all-packages python bench/git_overlap.py [--rtt-ms 0] [--runs 3]

On git, the world block's first push and `init` + `pull --apply` miss their targets
(docs/benchmarks.md) though each is two halves paced by different processes: roam packs and
seals, then `git push` sends the pack while the server's `index-pack` hashes it; `init`
fetches the branch (the server's `pack-objects`, roam's own indexing), then `pull` installs
from the mirror. On two cores the halves could overlap, if one streamed into the other. This
measures that work done at once, without building the design, against restic and against
roam's own sequential operation, alternating the order run by run:

- push: `roam push` of the home to a local-directory store (the scan, packing, sealing and
  writing of a first push, without git) while a mirror that already holds the same home's
  first push sends it with `git push` to a new remote through the proxy (the transfer and
  the server's indexing); the wall until both end. The local store skips the staging's SHA-1
  (hashlib, ~0.3 s of processor time for the large home), so this is a bound from below.
- pull: device C, whose mirror already holds the branch (its `init` ran untimed), runs
  `pull --apply` while a new device D runs `init` (the whole fetch); the wall until both end.
  A streamed design also waits for the trees before it can plan, so this too is a bound from
  below.

The halves alone are timed too, and a receiving server's cost for a pack of fewer than 100
objects. Prints the kept block `git-overlap` and rewrites it in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import homes
import measure
from measure import CommandFailed, Sample
from netproxy import latency_proxy
from network import s3_server
from network_git import GitNetworkBench, git_server, new_bench, write_block
from scenarios import Bench
from tools import Restic, Roam

from roam_backend_git.runner import BASE_CONFIG

REPO = Path(__file__).resolve().parent.parent
#: The kept block of docs/benchmarks.md this script rewrites.
BLOCK = "git-overlap"
#: The columns of the table, in order: what each timed step is.
STEPS = {
    "push": ("restic backup", "roam first push", "packing alone (local store)",
             "`git push` alone", "both at once"),
    "pull": ("restic restore", "roam init + pull", "`init` alone", "`pull --apply` alone",
             "both at once"),
}


def children_cpu() -> float:
    """Processor seconds of this process's waited-for children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def busy_jiffies() -> tuple[int, int]:
    """The machine's busy and total processor time so far (all cores, /proc/stat jiffies)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def at_once(*commands: tuple[list[str], dict[str, str]]) -> Sample:
    """Start every command together; the wall until the last one ends (launch included)."""
    os.sync()
    results: list[tuple[int, str]] = [(0, "")] * len(commands)

    def one(slot: int, argv: list[str], env: dict[str, str]) -> None:
        with tempfile.TemporaryFile() as err:
            code = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=err).returncode
            err.seek(0)
            results[slot] = (code, err.read().decode("utf-8", "replace"))

    started = time.perf_counter()
    threads = [threading.Thread(target=one, args=(slot, argv, env))
               for slot, (argv, env) in enumerate(commands)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    for code, err in results:
        if code != 0:
            raise CommandFailed(f"a command run at once exited {code}: {err.strip()[:400]}")
    return Sample(wall, 0.0, 0, "", "")


class OverlapBench(GitNetworkBench):
    """The halves of the git first push and of a join, alone and at once."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: cores busy on average while each step's timed command ran (the whole machine,
        #: the servers included)
        self.busy: dict[str, list[float]] = {}
        self.unpacked = (0, 0)  # objects and bytes of the pack `unpack_cost` timed
        self.unpack: dict[str, list[float]] = {}

    def metered(self, label: str, command: Callable[[], Sample]) -> Sample:
        """`command` run, and the cores the machine kept busy meanwhile noted under `label`."""
        before = busy_jiffies()
        sample = command()
        after = busy_jiffies()
        share = (after[0] - before[0]) / max(after[1] - before[1], 1)
        self.busy.setdefault(label, []).append(share * (os.cpu_count() or 1))
        return sample

    def device(self, name: str, folder: str, *, init: bool) -> Roam:
        """An empty home `folder` on `name`'s git store; `roam init` run there if `init`."""
        home = self.workdir / folder
        self.trash.discard(home)
        home.mkdir(parents=True)
        lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
        lines += [f"        {k}: {v}" for k, v in self.settings(name, folder).items()]
        (home / "config.yaml").write_text("\n".join(lines) + "\n")
        roam = self.roam(home)
        if init:
            roam("init")
        return roam

    def git_push(self, mirror: Path, tip: str, branch: str) -> tuple[list[str], dict[str, str]]:
        """`git push` of `tip` from `mirror` to a new remote behind the proxy, as roam runs it."""
        from support.git_remotes import bare_repo

        repo = bare_repo(self.git_root)
        argv = ["git"]
        for item in BASE_CONFIG:
            argv += ["-c", item]
        argv += [f"--git-dir={mirror}", "push", "--porcelain", "--no-verify", "--quiet",
                 f"{self.git_proxy.url}/{repo.name}", f"{tip}:refs/heads/{branch}"]
        env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
        return argv, env

    def staged_mirror(self, name: str) -> tuple[Path, str, str]:
        """A mirror holding `name`'s first push (pushed untimed), set aside; its tip, branch."""
        home, roam = self.fresh_home(name)
        roam("push", "--quiet")
        mirror = self.workdir / "staged-mirror"
        self.trash.discard(mirror)
        shutil.move(home / "roam" / "git-mirror", mirror)
        tip, ref = subprocess.run(
            ["git", f"--git-dir={mirror}", "for-each-ref", "--format=%(objectname) %(refname)",
             "refs/roam/"], capture_output=True, text=True, check=True).stdout.split()[:2]
        heads = subprocess.run(["git", f"--git-dir={self.repo}", "for-each-ref",
                                "--format=%(refname:short)", "refs/heads/"],
                               capture_output=True, text=True, check=True).stdout.split()
        assert ref.endswith("/tip") and len(heads) == 1, (ref, heads)
        return mirror, tip, heads[0]

    def unpack_cost(self, mirror: Path, objects: int = 30) -> dict[str, list[float]]:
        """Processor time a receiving server spends on a pack of `objects` of the largest blobs.

        Below `receive.unpackLimit` (100 objects unless the host sets it) `receive-pack` runs
        `unpack-objects`, which deflates every object into a loose file; from it on,
        `index-pack`, which keeps the pack. A push made while the packing goes on would send
        fewer objects at a time than one push after it.
        """
        listed = subprocess.run(
            ["git", f"--git-dir={mirror}", "cat-file", "--batch-all-objects",
             "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
            capture_output=True, text=True, check=True).stdout.split("\n")
        blobs = sorted((line.split() for line in listed if " blob " in line),
                       key=lambda row: -int(row[2]))[:objects]
        pack = self.workdir / "part.pack"
        with pack.open("wb") as out:
            subprocess.run(["git", "-c", "core.compression=0", "-c", "pack.window=0",
                            f"--git-dir={mirror}", "pack-objects", "--stdout", "-q"],
                           input="".join(f"{row[0]}\n" for row in blobs).encode(),
                           stdout=out, check=True)
        cpu: dict[str, list[float]] = {"unpack-objects": [], "index-pack": []}
        for run in range(self.runs):
            for tool in (("unpack-objects", "index-pack") if run % 2 == 0
                         else ("index-pack", "unpack-objects")):
                target = self.workdir / f"receiver-{tool}.git"
                self.trash.discard(target)
                subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
                argv = ["git", f"--git-dir={target}", tool, "-q"] if tool == "unpack-objects" \
                    else ["git", f"--git-dir={target}", tool, "--stdin"]
                before = children_cpu()
                with pack.open("rb") as source:
                    subprocess.run(argv, stdin=source, stdout=subprocess.DEVNULL, check=True)
                cpu[tool].append(children_cpu() - before)
                self.trash.discard(target)
        self.unpacked = (len(blobs), pack.stat().st_size)
        pack.unlink()
        return cpu

    def local_push(self, name: str) -> tuple[list[str], dict[str, str]]:
        """The home pointed at a fresh local-directory store, `init` run; its `push` argv."""
        home = homes.generate(homes.SPECS[name], self.workdir / "homes" / name,
                              Bench.settings(self, name))
        store = Bench.store(self, name)
        self.trash.discard(store)
        self.trash.discard(home / "roam")
        roam = Roam(home)
        roam("init", "--create-remote")
        return [*roam.cmd, "--home", str(home), "push", "--quiet"], roam.env

    def push_halves(self, name: str, restic: Restic, home: Path,
                    listing: Path) -> dict[str, list[float]]:
        """restic's first backup, roam's first push, its two halves alone and at once."""
        mirror, tip, branch = self.staged_mirror(name)
        walls: dict[str, list[float]] = {step: [] for step in STEPS["push"]}
        label = dict(enumerate(STEPS["push"]))

        def backup() -> Sample:
            restic.init()
            return self.metered(label[0], lambda: restic.backup(home, listing))

        def first_push() -> Sample:
            _home, fresh = self.fresh_home(name)
            return self.metered(label[1], lambda: fresh("push", "--quiet"))

        def packing() -> Sample:
            argv, env = self.local_push(name)
            return self.metered(label[2], lambda: measure.run(argv, env))

        def transfer() -> Sample:
            argv, env = self.git_push(mirror, tip, branch)
            return self.metered(label[3], lambda: measure.run(argv, env))

        def both() -> Sample:
            commands = self.local_push(name), self.git_push(mirror, tip, branch)
            return self.metered(label[4], lambda: at_once(*commands))

        steps = list(zip(STEPS["push"], (backup, first_push, packing, transfer, both),
                         strict=True))
        self.alternate(steps, walls, "push")
        self.unpack = self.unpack_cost(mirror)
        return walls

    def join_halves(self, name: str, restic: Restic) -> dict[str, list[float]]:
        """restic's restore, roam's init + pull, the halves alone and at once."""
        walls: dict[str, list[float]] = {step: [] for step in STEPS["pull"]}
        label = dict(enumerate(STEPS["pull"]))
        halves: dict[str, float] = {}
        target = self.workdir / "restore"

        def restore() -> Sample:
            self.trash.discard(target)
            sample = self.metered(label[0], lambda: restic(
                "restore", "latest", "--target", str(target)))
            self.trash.discard(target)
            return sample

        def sequential() -> Sample:
            device = self.device(name, "device-d", init=False)
            first = self.metered(label[2], lambda: device("init"))
            second = self.metered(label[3], lambda: device("pull", "--apply"))
            halves["init"], halves["pull"] = first.wall, second.wall
            return Sample(first.wall + second.wall, 0.0, 0, "", "")

        def init_alone() -> Sample:
            return Sample(halves["init"], 0.0, 0, "", "")

        def pull_alone() -> Sample:
            return Sample(halves["pull"], 0.0, 0, "", "")

        def both() -> Sample:
            ready = self.device(name, "device-c", init=True)
            new = self.device(name, "device-d", init=False)
            return self.metered(label[4], lambda: at_once(
                ([*ready.cmd, "--home", str(ready.home), "pull", "--apply"], ready.env),
                ([*new.cmd, "--home", str(new.home), "init"], new.env)))

        steps = list(zip(STEPS["pull"], (restore, sequential, init_alone, pull_alone, both),
                         strict=True))
        self.alternate(steps, walls, "pull")
        return walls

    def alternate(self, steps: list[tuple[str, Callable[[], Sample]]],
                  walls: dict[str, list[float]], what: str) -> None:
        """Every step `runs` times, the timed ones in a rotating order (halves follow theirs)."""
        timed = [step for step in steps if "alone" not in step[0] or what == "push"]
        derived = [step for step in steps if step not in timed]
        for run in range(self.runs):
            order = timed[run % len(timed):] + timed[:run % len(timed)]
            for label, step in order:
                self.say(f"overlap {what}, run {run + 1}: {label}")
                walls[label].append(step().wall)
            for label, step in derived:
                walls[label].append(step().wall)


def table(what: str, walls: dict[str, list[float]], busy: dict[str, list[float]]) -> str:
    restic = statistics.median(walls[STEPS[what][0]])
    lines = ["| " + " | ".join(("",) + STEPS[what]) + " |",
             "|---" + "|---:" * len(STEPS[what]) + "|"]
    lines.append("| median (s) | " + " | ".join(
        f"{statistics.median(walls[step]):.2f}" for step in STEPS[what]) + " |")
    lines.append("| × restic | " + " | ".join(
        f"{statistics.median(walls[step]) / restic:.2f}×" for step in STEPS[what]) + " |")
    lines.append("| cores busy | " + " | ".join(
        f"{statistics.median(busy[step]):.2f}" if step in busy else "–"
        for step in STEPS[what]) + " |")
    lines.append("| runs (s) | " + " | ".join(
        " / ".join(f"{w:.2f}" for w in walls[step]) for step in STEPS[what]) + " |")
    return "\n".join(lines)


def _prose(text: str) -> list[str]:
    """A docstring paragraph or list as Markdown lines: one line per paragraph or item."""
    items: list[str] = []
    for line in text.strip().splitlines():
        if line.startswith("- ") or not items:
            items.append(line.strip())
        else:
            items[-1] += " " + line.strip()
    return items


def _median(walls: dict[str, list[float]], what: str, column: int) -> float:
    return statistics.median(walls[STEPS[what][column]])


def block(command: str, started: str, load: tuple[str, str], args: argparse.Namespace,
          push: dict[str, list[float]], pull: dict[str, list[float]],
          bench: OverlapBench) -> str:
    """The kept block for docs/benchmarks.md, its reading computed from the medians."""
    def ratio(walls: dict[str, list[float]], what: str, column: int) -> float:
        return _median(walls, what, column) / _median(walls, what, 0)

    unpack = statistics.median(bench.unpack["unpack-objects"])
    index = statistics.median(bench.unpack["index-pack"])
    objects, size = bench.unpacked
    push_closes = ratio(push, "push", 4) <= 1.0
    pull_closes = ratio(pull, "pull", 4) <= 1.0
    busy = statistics.median(bench.busy[STEPS["pull"][4]])
    return "\n".join([
        f"<!-- kept:{BLOCK} -->", "",
        "## What would close the git misses: each operation's two halves at once", "",
        f"`{command}` at {started}, {args.runs} run(s) per column, RTT {args.rtt_ms:g} ms, "
        f"the `{args.home}` home; load average {load[0]} at the start, {load[1]} at the end; "
        f"{measure.machine()['cpu']}. Medians; *cores busy* is the whole machine's (servers "
        "and proxies included) while the step's timed commands ran.", "",
        *_prose(__doc__.split("\n\n")[2]), "", *_prose(__doc__.split("\n\n")[3]), "",
        f"First push (`{args.home}`):", "", table("push", push, bench.busy), "",
        f"A new device's `init` + `pull --apply` (`{args.home}`):", "",
        table("pull", pull, bench.busy), "",
        f"A receiving server's processor time for a pack of the {objects} largest blobs of "
        f"that first push ({size / 1e6:.0f} MB), {args.runs} run(s): `git unpack-objects` "
        f"{unpack:.2f} s against `git index-pack --stdin` {index:.2f} s "
        f"({unpack / index:.1f}×).", "",
        "What it shows:", "",
        f"- first push: at once the halves took {_median(push, 'push', 4):.2f} s, "
        f"{ratio(push, 'push', 4):.2f}× restic, against {ratio(push, 'push', 1):.2f}× for "
        "roam's push, which packs, then pushes. "
        + ("The row is met one after the other. " if ratio(push, "push", 1) <= 1.0 else
           "Pushing while the packing goes on would close the row. " if push_closes else
           "Even overlapped, the row stays above restic. ")
        + "git's `receive-pack` takes the ref updates before the pack and the pack's object "
        "count in its first bytes, so one push cannot start before the packing ends: it "
        f"would take several pushes, and a push of fewer than 100 objects (`receive."
        f"unpackLimit`'s default) costs the server {unpack / index:.1f}× the processor time "
        "of one that is kept as a pack (above). roam keeps one push per operation.",
        f"- init + pull: at once the halves took {_median(pull, 'pull', 4):.2f} s, "
        f"{ratio(pull, 'pull', 4):.2f}× restic, with {busy:.2f} of the 2 cores busy, against "
        f"{ratio(pull, 'pull', 1):.2f}× one after the other. "
        + ("The row is met one after the other." if ratio(pull, "pull", 1) <= 1.0 else
           "Streaming the fetch into the install would close the row." if pull_closes else
           "Streaming the fetch into the install would not close the row: both cores are "
           "busy, so it needs less work, not more overlap. The fetch's work is git's: the "
           "server's `pack-objects` reading and checksumming the whole pack, roam hashing "
           "every object to index it (`git_breakdown.py` splits it)."), "",
        f"<!-- /kept:{BLOCK} -->"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", choices=sorted(homes.SPECS), default="large")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rtt-ms", type=float, default=0.0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/roam-bench-overlap"))
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md",
                        help="the page whose git-overlap block is rewritten")
    args = parser.parse_args()
    load_start = measure.loadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    base = new_bench(args.workdir, args.runs)
    git_root = args.workdir / "git-remotes"
    shutil.rmtree(git_root, ignore_errors=True)
    git_root.mkdir(parents=True)
    rtt = args.rtt_ms / 1000
    try:
        with s3_server() as s3, git_server(git_root) as git_port:
            s3_port = int(s3.endpoint_url.rpartition(":")[2])  # type: ignore[attr-defined]
            with latency_proxy(s3_port, rtt / 2) as s3_proxy, \
                    latency_proxy(git_port, rtt / 2) as git_proxy:
                bench = OverlapBench(base, s3, s3_proxy, git_root, git_proxy, rtt)
                home = bench.home(args.home)
                listing = args.workdir / f"{args.home}.files"
                restic = bench.restic(args.home)
                push = bench.push_halves(args.home, restic, home, listing)
                pull = bench.join_halves(args.home, restic)
    finally:
        base.trash.empty()
        shutil.rmtree(git_root, ignore_errors=True)
    command = f"python bench/git_overlap.py {' '.join(sys.argv[1:])}".strip()
    text = block(command, started, (load_start, measure.loadavg()), args, push, pull, bench)
    write_block(args.out, text, BLOCK)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
