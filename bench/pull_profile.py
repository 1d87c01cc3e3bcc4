"""Where a local pull's time goes: phases, a profile, and an A/B against restic restore.

    python3 -m uv run --all-packages python bench/pull_profile.py setup [--home large]
    python3 -m uv run --all-packages python bench/pull_profile.py ab [--runs 3] [--other DIR]
    python3 -m uv run --all-packages python bench/pull_profile.py phases [--profile FILE]
    python3 -m uv run --all-packages python bench/pull_profile.py front [--runs 3]

`setup` generates the benchmark home (bench/homes.py; `large` by default, or a 5 KiB-mean
home of `--files N`), pushes it to a local store and backs the same files up with restic
into a local repository (once; kept under `--work`). `ab` alternates `roam pull --apply`
into a fresh home with `restic restore` into a fresh folder and prints, per run, wall time,
processor time (user + system, from `wait4`) and peak RSS, then the medians and the load
average; `--other DIR` adds a third tool: the same roam command with `PYTHONPATH` set to
another checkout's packages (an A/B of two versions of roam), `--no-restic` leaves restic
out. `phases` runs one pull
in-process, timing its phases (manifest load, plan, journal, staging, sync, renames, state
save) by wall and by the process's processor time, and with `--profile` writes a cProfile
of it. Nothing is synced or dropped between runs except an untimed `sync` before each.
`front` times the pull's sequential steps before and after its staging, `--runs` times, in
this process and without installing anything: `pull` (no `--apply`) into an empty home
(made once, kept), its plan (and `settle_type_changes` in it), then the install's naming of
staged folders, its `staging` journal (encoding alone, then written) and the state save,
into a scratch folder beside the home; medians of wall and processor time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homes
from tools import ARCHIVE_KEY, RESTIC_PASSWORD, Trash, _clean_env, compile_roam, run_cli_here

_LAUNCHER = """
import os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_pid, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, wall,
      usage.ru_utime + usage.ru_stime, file=open(int(sys.argv[1]), "w"))
"""


def measured(argv: list[str], env: dict[str, str], cwd: Path | None = None
             ) -> tuple[float, float, float]:
    """(wall s, processor s, peak RSS MiB) of one command, read by a small launcher."""
    os.sync()  # untimed: nothing the previous command left dirty is paid for here
    read_end, write_end = os.pipe()
    launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(write_end), *argv],
                                env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, pass_fds=(write_end,))
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        report = reader.read().split()
    err = launcher.communicate()[1]
    if len(report) != 4 or report[0] != "0":
        raise SystemExit(f"{' '.join(argv[:4])}… failed: {err.decode(errors='replace')[-400:]}")
    return float(report[2]), float(report[3]), int(report[1]) / 1024


def _settings(work: Path, device: str) -> dict[str, str]:
    return {"backend": "local", "local_dir": str(work / "store"), "device_name": device}


def _roam_cmd() -> list[str]:
    return [sys.executable, "-m", "roam_core.cli.main"]


def _roam_env() -> dict[str, str]:
    return {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY}


def _restic_env(work: Path) -> dict[str, str]:
    return {**_clean_env(), "RESTIC_REPOSITORY": str(work / "restic"),
            "RESTIC_PASSWORD": RESTIC_PASSWORD, "RESTIC_CACHE_DIR": str(work / "restic-cache")}


def setup(work: Path, name: str, files: int) -> None:
    """The home, its push to a local store and restic's backup of the same files."""
    if (work / "ready.json").exists():
        print(f"already set up: {json.loads((work / 'ready.json').read_text())}")
        return
    spec = homes.SPECS[name] if not files else homes.HomeSpec(
        f"scale{files}", files=files, shared_bytes=files * 5 * 1024)
    home = homes.generate(spec, work / "homes" / spec.name, _settings(work, "bench-a"))
    shutil.rmtree(work / "store", ignore_errors=True)
    shutil.rmtree(home / "roam", ignore_errors=True)
    env = _roam_env()
    subprocess.run([*_roam_cmd(), "--home", str(home), "init", "--create-remote"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*_roam_cmd(), "--home", str(home), "push", "--quiet"], env=env, check=True)
    listing = work / "files.txt"
    shared = homes.shared_paths(home)
    listing.write_text("\n".join(shared) + "\n")
    shutil.rmtree(work / "restic", ignore_errors=True)
    renv = _restic_env(work)
    subprocess.run(["restic", "--quiet", "init"], env=renv, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["restic", "--quiet", "backup", "--files-from-verbatim", str(listing),
                    "--host", "bench"], env=renv, cwd=home, check=True)
    (work / "ready.json").write_text(json.dumps({"home": spec.name, "files": len(shared)}))
    print(f"set up {spec.name}: {len(shared)} shared files")


def fresh_device(work: Path, trash: Trash, device: str = "device-b") -> Path:
    """An initialised empty home on the same store."""
    other = work / device
    trash.discard(other)
    other.mkdir(parents=True)
    lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
    lines += [f"        {k}: {v}" for k, v in _settings(work, "bench-b").items()]
    (other / "config.yaml").write_text("\n".join(lines) + "\n")
    subprocess.run([*_roam_cmd(), "--home", str(other), "init"], env=_roam_env(), check=True,
                   stdout=subprocess.DEVNULL)
    return other


def ab(work: Path, runs: int, other: Path | None, restic: bool = True) -> None:
    """Alternate roam pull (this checkout, and `other` when given) with restic restore."""
    trash = Trash(work / f"trash-{os.getpid()}")
    tools: dict[str, Callable[[], tuple[float, float, float]]] = {}

    def roam_pull(pythonpath: str | None) -> Callable[[], tuple[float, float, float]]:
        def step() -> tuple[float, float, float]:
            home = fresh_device(work, trash)
            env = _roam_env()
            if pythonpath:
                env["PYTHONPATH"] = pythonpath
            sample = measured([*_roam_cmd(), "--home", str(home), "pull", "--apply",
                               "--quiet"], env)
            trash.discard(home)
            return sample
        return step

    def restore() -> tuple[float, float, float]:
        target = work / "restore"
        trash.discard(target)
        sample = measured(["restic", "--quiet", "restore", "latest", "--target", str(target)],
                          _restic_env(work))
        trash.discard(target)
        return sample

    tools["roam"] = roam_pull(None)
    if other is not None:
        tools["roam-other"] = roam_pull(os.pathsep.join(
            str(p) for p in sorted(other.glob("roam_*/src"))))
    if restic:
        tools["restic"] = restore
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in tools}
    load_before = os.getloadavg()
    names = list(tools)
    for run in range(runs):
        for name in names if run % 2 == 0 else reversed(names):
            results[name].append(tools[name]())
            wall, cpu, rss = results[name][-1]
            print(f"run {run + 1} {name:10s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  "
                  f"rss {rss:5.0f} MiB  load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    for name, samples in results.items():
        print(f"median {name:10s} wall {statistics.median(s[0] for s in samples):6.2f} s  "
              f"cpu {statistics.median(s[1] for s in samples):6.2f} s  "
              f"rss {max(s[2] for s in samples):5.0f} MiB")
    trash.empty()


#: When this process started (phases say when they first began, from here).
_ORIGIN = time.perf_counter()


@contextlib.contextmanager
def _timed(totals: dict[str, list[float]], name: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        spent = totals.setdefault(name, [0.0, 0.0, wall - _ORIGIN])
        spent[0] += time.perf_counter() - wall
        spent[1] += time.process_time() - cpu


def _wrap(totals: dict[str, list[float]], owner: object, attr: str, name: str) -> None:
    original = getattr(owner, attr)

    def wrapped(*args: object, **kwargs: object) -> object:
        with _timed(totals, name):
            return original(*args, **kwargs)

    setattr(owner, attr, wrapped)


def _thread_cpu(threads: dict[str, float], owner: object, attr: str, name: str) -> None:
    """Add the processor time of the thread running `owner.attr` to `threads[name]`."""
    original = getattr(owner, attr)

    def wrapped(*args: object, **kwargs: object) -> object:
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            threads[name] = threads.get(name, 0.0) + time.thread_time() - started

    setattr(owner, attr, wrapped)


def _every_thread_cpu(threads: dict[str, float]) -> None:
    """Add every other thread's processor time to `threads` by name (pools summed)."""
    import threading

    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        started = time.thread_time()
        try:
            original(self)
        finally:
            name = "thread " + self.name.rstrip("0123456789_-")
            threads[name] = threads.get(name, 0.0) + time.thread_time() - started

    threading.Thread.run = run  # type: ignore[method-assign]


def _children_cpu() -> float:
    """Processor time of the child processes ended so far (the install's writer process)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phases(work: Path, profile: Path | None) -> None:
    """One pull in this process, its phases timed (and profiled when asked)."""
    trash = Trash(work / f"trash-{os.getpid()}")
    home = fresh_device(work, trash)
    pull_in_process(home, profile)
    trash.discard(home)
    trash.empty()


def pull_in_process(home: Path, profile: Path | None) -> None:
    """`roam pull --apply` of `home` in this process, its phases and threads timed."""
    from roam_core.engine import journal, pull, remote
    from roam_core.engine import plan as plan_module

    totals: dict[str, list[float]] = {}
    _wrap(totals, remote.RemoteView, "read_trees", "manifest load (read_trees)")
    _wrap(totals, plan_module.Planner, "build", "plan (Planner.build)")
    _wrap(totals, journal.Install, "_journal", "journal writes")
    _wrap(totals, journal.Install, "_stage", "stage (temps, writers)")
    _wrap(totals, journal, "syncfs", "syncfs")
    _wrap(totals, journal.Install, "_apply", "renames (per file)")
    _wrap(totals, journal.Install, "_place", "renames (staged folders)")
    _wrap(totals, journal, "save_state", "state save (install)")
    _wrap(totals, pull, "save_state", "state save (pull)")
    _wrap(totals, remote.RemoteView, "remember_trees", "tree cache (remember_trees)")
    from roam_core.engine import prefetch

    threads: dict[str, float] = {}
    _thread_cpu(threads, journal.Install, "_stage", "install thread (staging)")
    _thread_cpu(threads, prefetch.Prefetch, "_run", "store reader thread")
    _every_thread_cpu(threads)

    os.environ["ROAM_ARCHIVE_KEY"] = ARCHIVE_KEY
    os.sync()
    profiler = cProfile.Profile() if profile else None
    global _ORIGIN
    wall, cpu = _ORIGIN, _ = time.perf_counter(), time.process_time()
    main_cpu = time.thread_time()
    children = _children_cpu()
    if profiler:
        profiler.enable()
    try:
        run_cli_here("--home", str(home), "pull", "--apply", "--quiet")
    finally:
        if profiler:
            profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    threads["main thread"] = time.thread_time() - main_cpu
    threads["writer process"] = _children_cpu() - children
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'phase':34s} {'wall s':>8s} {'cpu s':>8s} {'from s':>8s}")
    for name, (w, c, begun) in totals.items():
        print(f"{name:34s} {w:8.2f} {c:8.2f} {begun:8.2f}")
    print(f"{'whole pull (in process)':34s} {wall:8.2f} {cpu:8.2f} (+ writer process)")
    for name, spent in sorted(threads.items()):
        print(f"{name:34s} {'':8s} {spent:8.2f}")
    with open("/proc/self/status") as status:
        lines = status.readlines()
    print(next(line for line in lines if line.startswith("VmHWM")).strip())
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread's, ended ones too
    print(f"context switches: voluntary {usage.ru_nvcsw}, involuntary {usage.ru_nivcsw}")
    if profiler and profile:
        profiler.dump_stats(profile)
        print(f"profile written to {profile}")


def front(work: Path, runs: int) -> None:
    """The pull's sequential steps around its staging, timed without installing."""
    import contextlib
    import io

    from roam_core.engine import journal, typechange
    from roam_core.engine import plan as plan_module
    from roam_core.engine.state import save_state

    home = work / "device-front"
    if not (home / "roam").exists():
        fresh_device(work, Trash(work / f"trash-{os.getpid()}"), "device-front")
    totals: dict[str, list[tuple[float, float]]] = {}

    @contextlib.contextmanager
    def timed(name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        totals.setdefault(name, []).append((time.perf_counter() - wall,
                                            time.process_time() - cpu))

    plans: list[plan_module.Plan] = []
    build, settle = plan_module.Planner.build, typechange.settle_type_changes

    def timed_build(self: plan_module.Planner) -> plan_module.Plan:
        with timed("plan (Planner.build)"):
            plans.append(build(self))
        return plans[-1]

    def timed_settle(planner: plan_module.Planner) -> None:
        with timed("  settle_type_changes"):
            settle(planner)

    plan_module.Planner.build = timed_build  # type: ignore[method-assign]
    plan_module.settle_type_changes = timed_settle
    os.environ["ROAM_ARCHIVE_KEY"] = ARCHIVE_KEY
    import gc

    gc.disable()  # as in a pull (`collector_paused`): the steps below run outside it here
    scratch = work / f"front-{os.getpid()}"
    for run in range(runs):
        with contextlib.redirect_stdout(io.StringIO()):
            run_cli_here("--home", str(home), "pull", "--quiet")
        plan = plans.pop()
        state_dir = scratch / str(run)
        state_dir.mkdir(parents=True)
        install = journal.Install(home, state_dir, plan.ops)
        with timed("install: staged folders named"):
            install._name_staged()
        with timed("journal encoded (not written)"):
            for _piece in journal._encoded_ops(install.ops, install.temp):
                pass
        with timed("journal written (staging)"):
            install._journal("staging")
        assert plan.new_state is not None
        plan.new_state.install = install.stamp
        with timed("state save"):
            save_state(state_dir, plan.new_state)
    shutil.rmtree(scratch)
    print(f"load average {os.getloadavg()[0]:.1f}, {runs} runs")
    for name, samples in totals.items():
        print(f"{name:34s} wall {statistics.median(s[0] for s in samples):6.3f} s  "
              f"cpu {statistics.median(s[1] for s in samples):6.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("setup", "ab", "phases", "phases-of", "front"))
    parser.add_argument("--device", type=Path, help="phases-of: the initialised home to pull")
    parser.add_argument("--work", type=Path, default=Path("/tmp/roam-bench-pull"))
    parser.add_argument("--home", default="large", choices=sorted(homes.SPECS))
    parser.add_argument("--files", type=int, default=0, help="a 5 KiB-mean home of N files")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--other", type=Path, help="another checkout of roam to compare")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the pull here")
    parser.add_argument("--no-restic", action="store_true", help="ab: roam only")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.action == "setup":
        compile_roam()
        setup(args.work, args.home, args.files)
    elif args.action == "ab":
        ab(args.work, args.runs, args.other, not args.no_restic)
    elif args.action == "front":
        front(args.work, args.runs)
    elif args.action == "phases-of":
        pull_in_process(args.device, args.profile)
    else:
        phases(args.work, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
