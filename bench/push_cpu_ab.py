"""A first push's processor time and peak RSS, checkouts alternating (issue 22).

    python3 -m uv run --all-packages python bench/push_cpu_ab.py HOME CHECKOUT[,CHECKOUT...] RUNS

HOME is a home made by bench/scale.py or bench/push_profile.py (a local store). For each run
each checkout (a roam checkout with its own .venv) pushes HOME afresh (store and `roam/`
removed, `init --create-remote`), the order alternating. Prints per push the user + system
time of the CLI and its scan worker (`RUSAGE_CHILDREN`: on a loaded machine a fairer measure
than wall time), its own peak RSS and its wall time, then each checkout's medians. A
checkout named `restic` is restic backing up the same files (the home's files but `roam/`)
into a fresh local repository beside the store, measured the same way.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
from pathlib import Path

from push_timeline import _store

from roam_core.testing.rss import run_measured


def _roam(checkout: Path, home: Path, store: Path, env: dict[str, str]) -> list[str]:
    """A fresh store and `roam/` for `checkout`'s first push of `home`; its command."""
    roam = [str(checkout / ".venv" / "bin" / "python"), "-m", "roam_core.cli.main",
            "--home", str(home)]
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(home / "roam", ignore_errors=True)
    subprocess.run([*roam, "init", "--create-remote"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return [*roam, "push", "--quiet"]


def _restic(home: Path, store: Path, env: dict[str, str]) -> list[str]:
    """A fresh restic repository beside `store`; the backup of `home`'s files (no `roam/`)."""
    repo, listing = store.with_name("restic-ab"), store.with_name("restic-ab.files")
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(store.with_name("restic-ab-cache"), ignore_errors=True)
    env.update({"RESTIC_REPOSITORY": str(repo), "RESTIC_PASSWORD": "bench",
                "RESTIC_CACHE_DIR": str(store.with_name("restic-ab-cache"))})
    files = sorted(path.relative_to(home).as_posix() for path in home.rglob("*")
                   if path.is_file() and path.relative_to(home).parts[0] != "roam")
    listing.write_text("\n".join(files) + "\n")
    subprocess.run(["restic", "--quiet", "init"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return ["restic", "--quiet", "backup", "--files-from-verbatim", str(listing),
            "--host", "bench"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("checkouts", help="comma-separated roam checkouts (each with .venv)")
    parser.add_argument("runs", type=int)
    args = parser.parse_args()
    home = args.home.resolve()
    store = _store(home)
    checkouts = [Path(c) if c == "restic" else Path(c).resolve()
                 for c in args.checkouts.split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = "ab" * 32
    results: dict[Path, list[tuple[float, float, float]]] = {c: [] for c in checkouts}
    for run in range(args.runs):
        for checkout in checkouts if run % 2 == 0 else list(reversed(checkouts)):
            command = _restic(home, store, env) if str(checkout) == "restic" else \
                _roam(checkout, home, store, env)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            measured = run_measured(command, env=env, cwd=home, stdout=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            results[checkout].append((cpu, measured.peak_mib, measured.wall))
            print(f"{checkout}: processor {cpu:.1f} s, peak RSS {measured.peak_mib:.0f} MiB, "
                  f"wall {measured.wall:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    for checkout, rows in results.items():
        print(f"{checkout}: median processor {statistics.median(r[0] for r in rows):.1f} s, "
              f"peak RSS {max(r[1] for r in rows):.0f} MiB, "
              f"median wall {statistics.median(r[2] for r in rows):.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
