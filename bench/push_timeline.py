"""A first push's memory over time: its VmRSS and VmHWM each second, with the store's objects.

    python3 -m uv run --all-packages python bench/push_timeline.py HOME [--python PY]

HOME is a home made by bench/scale.py or bench/push_profile.py (its config names a local
store); its store and `roam/` are removed, `init --create-remote` runs, then `push --quiet`
with each second's resident and high-water RSS (MiB) and the count of packs, indexes and
snapshots stored so far, which tells the packing, the trees and the state's save apart
(issue 22). `--python` is the interpreter of the checkout to measure (this one's by default).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml


def _store(home: Path) -> Path:
    config = yaml.safe_load((home / "config.yaml").read_text())
    return Path(config["plugins"]["entries"]["roam"]["settings"]["local_dir"])


def _count(folder: Path) -> int:
    return sum(len(files) for _root, _dirs, files in os.walk(folder))


def _status(pid: int) -> tuple[int, int] | None:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    found = {line.split(":")[0]: int(line.split()[1]) // 1024 for line in lines
             if line.startswith(("VmRSS", "VmHWM"))}
    return found.get("VmRSS", 0), found.get("VmHWM", 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    home, python = args.home.resolve(), args.python
    store = _store(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = "ab" * 32
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(home / "roam", ignore_errors=True)
    roam = [python, "-m", "roam_core.cli.main", "--home", str(home)]
    subprocess.run([*roam, "init", "--create-remote"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    push = subprocess.Popen([*roam, "push", "--quiet"], env=env)
    started, peak = time.monotonic(), 0
    while push.poll() is None:
        found = _status(push.pid)
        if found is None:
            break
        peak = max(peak, found[1])
        objects = store / "objects"
        print(f"{time.monotonic() - started:6.1f} s  rss {found[0]:4d}  hwm {found[1]:4d}  "
              f"packs {_count(objects / 'packs')}  indexes {_count(objects / 'index')}  "
              f"snapshots {_count(objects / 'snapshots')}", flush=True)
        time.sleep(1.0)
    print(f"exit {push.wait()}; peak RSS {peak} MiB (sampled; bench/scale.py reads it exactly)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
