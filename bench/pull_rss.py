"""Peak RSS of `roam pull --apply` from S3, with and without the fixed mmap threshold (issue 22).

Pushes a bench home (`large` without its ignored weight, by default) to SeaweedFS at 0 ms
(started as the tests start it, stopped by its PID), then pulls it on fresh devices, A/B
alternating: A is today's code, B the same pull with `roam_core.store.malloc`'s fix undone
(the old behaviour). Each pull is measured by `roam_core.testing.rss` (its own peak RSS and
its processor time). Prints one line per run and the medians.

    python3 -m uv run --all-packages python bench/pull_rss.py [--spec large] [--rounds 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import homes
from measure import loadavg
from network import s3_server
from tools import ARCHIVE_KEY

from roam_core.testing.rss import run_measured

#: The pull with the fix undone: every reader's arena keeps what it freed, as before.
_UNDONE = """
import runpy, sys
import roam_core.store.parallel as parallel, roam_core.store.spans as spans
parallel.map_large_buffers = spans.map_large_buffers = lambda: None
spans.release_free_memory = lambda: None
sys.argv = ["roam", *sys.argv[1:]]
runpy.run_module("roam_core.cli.main", run_name="__main__")
"""


def _roam(home: Path, env: dict[str, str], *args: str, undone: bool = False) -> tuple[float, float]:
    """Run one roam command measured: (peak MiB, processor seconds of its process)."""
    head = [sys.executable, "-c", _UNDONE] if undone else [sys.executable, "-m",
                                                           "roam_core.cli.main"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as err:
        measured = run_measured([*head, "--home", str(home), *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        if measured.code != 0:
            raise SystemExit(f"roam {' '.join(args)} failed: {err.read().decode()[-400:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return measured.peak_mib, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="large", choices=sorted(homes.SPECS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path(f"/tmp/pullnet8-rss-{os.getpid()}"))
    options = parser.parse_args()
    spec = dataclasses.replace(homes.SPECS[options.spec], weight=False)
    try:
        with s3_server() as server:
            bucket = server.fresh_bucket()  # type: ignore[attr-defined]
            settings = {k: str(v) for k, v in server.settings(bucket).items()}  # type: ignore[attr-defined]
            settings["max_file_mb"] = "128"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
            env.update(server.env(), ROAM_ARCHIVE_KEY=ARCHIVE_KEY)  # type: ignore[attr-defined]
            desk = homes.generate(spec, options.work / "desk", {**settings, "device_name": "desk"})
            _roam(desk, env, "init", "--create-remote")
            peak, cpu = _roam(desk, env, "push", "--quiet")
            print(f"push: peak {peak:.0f} MiB, cpu {cpu:.1f} s")
            results: dict[str, list[tuple[float, float]]] = {"fixed": [], "undone": []}
            for number in range(options.rounds):
                for label in ("fixed", "undone"):
                    laptop = options.work / f"laptop-{label}-{number}"
                    laptop.mkdir(parents=True)
                    (laptop / "config.yaml").write_text(homes._config(
                        {**settings, "device_name": f"laptop-{label}-{number}"}))
                    _roam(laptop, env, "init")
                    peak, cpu = _roam(laptop, env, "pull", "--apply", "--quiet",
                                      undone=label == "undone")
                    results[label].append((peak, cpu))
                    print(f"{label}: pull --apply peak {peak:.0f} MiB, cpu {cpu:.1f} s, "
                          f"load {loadavg()}", flush=True)
                    shutil.rmtree(laptop)
            for label, runs in results.items():
                print(f"median {label}: peak {statistics.median(r[0] for r in runs):.0f} MiB, "
                      f"cpu {statistics.median(r[1] for r in runs):.1f} s")
    finally:
        shutil.rmtree(options.work, ignore_errors=True)


if __name__ == "__main__":
    main()
