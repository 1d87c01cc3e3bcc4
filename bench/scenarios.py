"""The six scenarios of issue 12, each run side by side (roam, then restic, order alternating)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import homes
from measure import Sample, Series
from tools import Restic, Roam, Trash

KiB = 1024


@dataclass
class Result:
    """One scenario's numbers and its target."""

    key: str
    title: str
    home: str
    target: str
    roam: Series = field(default_factory=Series)
    restic: Series = field(default_factory=Series)
    ratio_target: float | None = None
    absolute_target: float | None = None
    notes: list[str] = field(default_factory=list)
    extra_ok: bool = True

    @property
    def ratio(self) -> float:
        return self.roam.median / self.restic.median if self.restic.samples else float("nan")

    @property
    def met(self) -> bool:
        ok = self.extra_ok
        if self.ratio_target is not None:
            ok = ok and self.ratio <= self.ratio_target
        if self.absolute_target is not None:
            ok = ok and self.roam.median <= self.absolute_target
        return ok


class Bench:
    """Everything one harness run owns under its work directory."""

    def __init__(self, workdir: Path, restic_binary: str, runs: int,
                 say: Callable[[str], None]) -> None:
        self.workdir = workdir
        self.restic_binary = restic_binary
        self.runs = runs
        self.say = say
        self.checks: list[str] = []
        self.trash = Trash(workdir / "trash")

    # -- homes ----------------------------------------------------------------------------

    def settings(self, name: str, device: str = "bench-a") -> dict[str, str]:
        found = {"backend": "local", "local_dir": str(self.store(name)), "device_name": device}
        if name == "huge":
            found["max_file_mb"] = "2048"
        return found

    def store(self, name: str) -> Path:
        return self.workdir / "stores" / name

    def home(self, name: str) -> Path:
        spec = homes.SPECS[name]
        self.say(f"home {name}: generating (cached between runs when unchanged)")
        home = homes.generate(spec, self.workdir / "homes" / name, self.settings(name))
        listing = self.workdir / f"{name}.files"
        listing.write_text("\n".join(homes.shared_paths(home)) + "\n")
        return home

    def restic(self, name: str) -> Restic:
        return Restic(self.restic_binary, self.workdir / "restic" / name,
                      self.workdir / "restic-cache", self.trash)

    def fresh_roam(self, name: str, home: Path) -> Roam:
        self.trash.discard(self.store(name))
        self.trash.discard(home / "roam")
        roam = Roam(home)
        roam("init", "--create-remote")
        return roam

    def pair(self, result: Result, roam_step: Callable[[], Sample],
             restic_step: Callable[[], Sample], run: int) -> None:
        """Run both tools once, alternating who goes first to spread the machine's noise."""
        steps = [(result.roam, roam_step), (result.restic, restic_step)]
        for series, step in steps if run % 2 == 0 else reversed(steps):
            series.add(step())

    # -- scenarios ------------------------------------------------------------------------

    def first_push(self, name: str) -> tuple[Result, Roam, Restic]:
        """Scenario 2: first push of `name` against restic's first backup of the same files."""
        home = self.home(name)
        listing = self.workdir / f"{name}.files"
        result = Result("2", f"first push of `{name}`", name, "≤ 1.0× restic backup",
                        ratio_target=1.0)
        restic = self.restic(name)
        roam = Roam(home)
        for run in range(self.runs):
            self.say(f"scenario 2 ({name}): run {run + 1}/{self.runs}")

            def roam_step() -> Sample:
                self.fresh_roam(name, home)
                return roam("push", "--quiet")

            def restic_step() -> Sample:
                restic.init()
                return restic.backup(home, listing)

            self.pair(result, roam_step, restic_step, run)
        roam_size = homes.tree_bytes(self.store(name))
        restic_size = homes.tree_bytes(restic.repo)
        result.notes.append(f"store after the push: roam {roam_size / 2**20:.0f} MiB, "
                            f"restic {restic_size / 2**20:.0f} MiB")
        return result, roam, restic

    def status_unchanged(self, name: str, roam: Roam, restic: Restic,
                         absolute: float | None) -> Result:
        """Scenario 1: `roam status` with nothing changed against restic's no-change backup."""
        home = roam.home
        listing = self.workdir / f"{name}.files"
        target = "≤ 0.5× restic" + (f" and ≤ {absolute} s" if absolute else "")
        result = Result("1", f"status, nothing changed (`{name}`)", name, target,
                        ratio_target=0.5, absolute_target=absolute)
        roam("status")  # warm: the stat cache is written by the first look
        # status remembers a full look (roam/cache/status.json) but trusts nothing changed
        # within 2 s of it; the push just before is waited out, as any user's last edit is
        time.sleep(2.5)
        roam("status")
        for run in range(self.runs):
            self.say(f"scenario 1 ({name}): run {run + 1}/{self.runs}")

            def roam_step() -> Sample:
                sample = roam("status")
                if "in sync" not in sample.out:
                    raise SystemExit(f"bench: roam status is not in sync:\n{sample.out}")
                return sample

            self.pair(result, roam_step, lambda: restic.backup(home, listing), run)
        full = []
        for _ in range(self.runs):  # what the first status after a change costs
            (home / "roam" / "cache" / "status.json").unlink(missing_ok=True)
            full.append(roam("status").wall)
        result.notes.append(f"roam status without its memo (a full look, the first status "
                            f"after a change): median {statistics.median(full):.2f} s")
        return result

    def incremental(self, name: str, roam: Roam, restic: Restic) -> Result:
        """Scenario 3: edit one file and append to MEMORY.md, then push / backup."""
        home = roam.home
        listing = self.workdir / f"{name}.files"
        result = Result("3", f"incremental push (`{name}`)", name,
                        "≤ 0.5× restic; store growth ≤ 2× changed bytes + 64 KiB",
                        ratio_target=0.5)
        edited = next(rel for rel in homes.shared_paths(home)
                      if rel.endswith("SKILL.md") and "skill-0042" in rel)
        growth: list[tuple[int, int, int]] = []
        for run in range(self.runs):
            self.say(f"scenario 3 ({name}): run {run + 1}/{self.runs}")
            path = home / edited
            data = bytearray(path.read_bytes())
            middle = len(data) // 2
            data[middle:middle + 40] = f"edited in run {run:04d} of the benchmark..".encode()[:40]
            path.write_bytes(bytes(data))
            with (home / "memories" / "MEMORY.md").open("a") as handle:
                handle.write(f"§ benchmark run {run}: the user prefers tea to coffee\n")
            changed = len(data) + (home / "memories" / "MEMORY.md").stat().st_size
            before = (homes.tree_bytes(self.store(name)), homes.tree_bytes(restic.repo))
            self.pair(result, lambda: roam("push", "--quiet"),
                      lambda: restic.backup(home, listing), run)
            after = (homes.tree_bytes(self.store(name)), homes.tree_bytes(restic.repo))
            growth.append((changed, after[0] - before[0], after[1] - before[1]))
        changed, roam_growth, restic_growth = max(growth, key=lambda g: g[1])
        limit = 2 * changed + 64 * KiB
        result.extra_ok = roam_growth <= limit
        result.notes.append(
            f"changed files hold {changed / KiB:.1f} KiB; store growth per push: roam "
            f"{roam_growth / KiB:.1f} KiB (limit {limit / KiB:.1f} KiB), restic "
            f"{restic_growth / KiB:.1f} KiB")
        return result

    def pull_empty(self, name: str, restic: Restic) -> Result:
        """Scenario 4: `pull --apply` into an empty home against `restic restore`."""
        result = Result("4", f"pull --apply into an empty home (`{name}`)", name,
                        "≤ 1.0× restic restore", ratio_target=1.0)
        target = self.workdir / "restore"
        for run in range(self.runs):
            self.say(f"scenario 4 ({name}): run {run + 1}/{self.runs}")

            def roam_step() -> Sample:
                other = self.second_device(name)
                sample = Roam(other)("pull", "--apply")
                self.trash.discard(other)
                return sample

            def restic_step() -> Sample:
                self.trash.discard(target)
                sample = restic("restore", "latest", "--target", str(target))
                self.trash.discard(target)
                return sample

            self.pair(result, roam_step, restic_step, run)
        return result

    def second_device(self, name: str, *, init: bool = True) -> Path:
        """An empty home set up for `name`'s store; `roam init` run there unless not `init`."""
        other = self.workdir / "device-b"
        self.trash.discard(other)
        other.mkdir(parents=True)
        lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
        lines += [f"        {k}: {v}" for k, v in self.settings(name, "bench-b").items()]
        (other / "config.yaml").write_text("\n".join(lines) + "\n")
        if init:
            self.roam(other)("init")
        return other

    def roam(self, home: Path) -> Roam:
        """roam on `home` with what this bench's store needs in its environment."""
        return Roam(home)

    def memory(self) -> Result:
        """Scenario 5: peak RSS pushing and pulling a home holding one 1 GiB file."""
        home = self.home("huge")
        listing = self.workdir / "huge.files"
        result = Result("5", "peak RSS, one 1 GiB file (push / pull)", "huge",
                        "≤ 200 MiB RSS")
        restic = self.restic("huge")
        self.say("scenario 5: push and pull of a 1 GiB file")
        roam = self.fresh_roam("huge", home)
        push = result.roam.add(roam("push", "--quiet"))
        restic.init()
        backup = result.restic.add(restic.backup(home, listing))
        other = self.second_device("huge")
        pull = result.roam.add(Roam(other)("pull", "--apply"))
        self.trash.discard(other)
        target = self.workdir / "restore"
        self.trash.discard(target)
        restore = result.restic.add(restic("restore", "latest", "--target", str(target)))
        self.trash.discard(target)
        result.extra_ok = max(push.rss_mib, pull.rss_mib) <= 200
        result.notes.append(
            f"roam push {push.rss_mib:.0f} MiB in {push.wall:.1f} s, roam pull --apply "
            f"{pull.rss_mib:.0f} MiB in {pull.wall:.1f} s; restic backup {backup.rss_mib:.0f} "
            f"MiB in {backup.wall:.1f} s, restic restore {restore.rss_mib:.0f} MiB in "
            f"{restore.wall:.1f} s")
        self.trash.discard(self.store("huge"))
        self.trash.discard(restic.repo)
        return result

    def startup(self, roam: Roam, restic: Restic) -> list[Result]:
        """Scenario 6: `roam --version` and `roam status` on `small`, absolute ≤ 0.25 s."""
        version = Result("6a", "`roam --version`", "small", "≤ 0.25 s",
                         absolute_target=0.25)
        status = Result("6b", "`roam status` (`small`)", "small", "≤ 0.25 s",
                        absolute_target=0.25)
        listing = self.workdir / "small.files"
        roam("status")
        for run in range(max(self.runs, 5)):
            self.say(f"scenario 6: run {run + 1}")
            self.pair(version, roam.version, lambda: restic("version"), run)
            self.pair(status, lambda: roam("status"),
                      lambda: restic.backup(roam.home, listing), run)
        version.notes.append("restic column: `restic version`")
        status.notes.append("restic column: `restic backup` of the same files, nothing changed")
        return [version, status]

    # -- the never-read check -------------------------------------------------------------

    def weight_untouched(self, roam: Roam) -> str:
        """Run `roam status` under strace and report whether any ignored weight was opened."""
        if shutil.which("strace") is None:
            return "not checked (strace is not installed)"
        trace = self.workdir / "strace.txt"
        cmd = ["strace", "-f", "-qq", "-e", "trace=openat,open,stat,newfstatat,statx,lstat",
               "-o", str(trace), *roam.cmd, "--home", str(roam.home), "status"]
        subprocess.run(cmd, env=roam.env, capture_output=True, check=False)
        roots = [str(roam.home / name) for name in homes.weight_roots(roam.home)]
        roots += [str(roam.home / "skills/devops/skill-0000/node_modules")]
        touched = [line for line in trace.read_text().splitlines()
                   if any(f'"{root}/' in line or f'"{root}"' in line for root in roots)]
        trace.unlink()
        if touched:
            print("\n".join(touched[:20]), file=sys.stderr)
            return f"FAILED: {len(touched)} file-system calls inside ignored weight"
        return ("checked: `roam status` on `large` under strace made no file-system call "
                "below venv/, node_modules/ (also a nested one), cache/, sessions/, logs/ "
                "or on state.db")
