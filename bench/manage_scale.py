"""Peak RSS of stats, forget, prune and key rotate on a store of 100,000 blobs (issue 23).

    python3 -m uv run --all-packages python bench/manage_scale.py [--files N] [--work DIR]

Builds a home of `--files` small shared files (random, 2 KiB mean, so each is one blob of its
own), pushes it to a local store, changes a tenth of them and pushes again (a second
generation, so forget and prune have something to do and prune has mixed packs to repack),
then runs `roam stats --json`, `roam forget --keep-last 1 --apply`, `roam prune --apply
--grace-minutes 0` and `roam key rotate`, each measured on its own (`roam_core.testing.rss`:
the command's own peak RSS and wall time). Prints one line per command.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from roam_core.testing.rss import run_measured


def _write_home(home: Path, store: Path, files: int, rng: random.Random) -> list[Path]:
    lines = ["plugins:", "  entries:", "    roam:", "      settings:",
             "        backend: local", f"        local_dir: {store}",
             "        device_name: scale", "        operation_timeout_seconds: 7200"]
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("\n".join(lines) + "\n")
    paths = []
    for number in range(files):
        path = home / "skills" / f"s{number // 1000:03d}" / f"f{number:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randrange(512, 3584)))
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-manage-scale-"))
    store, home = work / "store", work / "home"
    store.mkdir(parents=True)
    rng = random.Random(23)
    paths = _write_home(home, store, args.files, rng)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = os.urandom(32).hex()
    roam = [sys.executable, "-m", "roam_core.cli.main", "--home", str(home)]
    log = (work / "log.txt").open("w")

    def measured(label: str, *words: str, extra: dict[str, str] | None = None) -> None:
        done = run_measured([*roam, *words], env={**env, **(extra or {})}, stdout=log,
                            stderr=log)
        print(f"{label}: exit {done.code}, peak RSS {done.peak_mib:.0f} MiB, "
              f"{done.wall:.1f} s", flush=True)
        if done.code != 0:
            raise SystemExit(f"{label} failed: see {work / 'log.txt'}")

    measured("init", "init")
    measured("first push", "push", "-q")
    for path in rng.sample(paths, len(paths) // 10):
        path.write_bytes(rng.randbytes(rng.randrange(512, 3584)))
    measured("second push", "push", "-q")
    measured("stats", "stats", "--json")
    measured("forget --keep-last 1", "forget", "--keep-last", "1", "--apply", "--json")
    measured("prune --apply", "prune", "--apply", "--grace-minutes", "0", "--json")
    measured("key rotate", "key", "rotate", extra={"ROAM_NEW_ARCHIVE_KEY": os.urandom(32).hex()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
