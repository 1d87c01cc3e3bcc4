"""A/B of the pull after init on git: copies of one initialised device, pulled alternately.

    python3 -m uv run --all-packages python bench/git_pull_ab.py [--runs 4]
        [--other NAME=DIR ...] [--work /tmp/roam-bench-git-pull]

Once (kept under `--work`): the `large` home pushed to a bare repository on this disk
(file://), a second device initialised from it (its `init` fetched the branch into its
mirror), and the same store copied into a plain directory for the local backend (the git
tree's files as `objects/<key>`, HEAD as a ref). Then per run, for this checkout (`this`),
the local directory (`local`: the floor, the same store read by the local backend) and each
`--other NAME=DIR` (this roam with `PYTHONPATH=DIR`, e.g. another checkout's
`roam_backend_git/src`): the initialised device copied and `roam pull --apply` timed in it,
in an order that alternates, with wall, processor time and peak RSS (bench/pull_profile.py's
launcher). The copies go to a trash emptied at the end, never between runs.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import homes
from pull_profile import _roam_cmd, _roam_env, measured
from tools import Trash


def _device(root: Path, settings: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    lines = ["plugins:", "  entries:", "    roam:", "      settings:"]
    lines += [f"        {key}: {value}" for key, value in settings.items()]
    (root / "config.yaml").write_text("\n".join(lines) + "\n")
    subprocess.run([*_roam_cmd(), "--home", str(root), "init"], env=_roam_env(), check=True,
                   stdout=subprocess.DEVNULL)
    return root


def setup(work: Path) -> dict[str, Path]:
    """The initialised devices, made once: `git` on the bare repository, `local` on a copy."""
    from support.git_remotes import bare_repo, file_url

    devices = {"git": work / "device-git", "local": work / "device-local"}
    if all(path.exists() for path in devices.values()):
        return devices
    shutil.rmtree(work / "made", ignore_errors=True)
    made = work / "made"
    made.mkdir(parents=True)
    repo = bare_repo(made, "store.git")
    settings = {"backend": "git", "git_remote": file_url(repo), "device_name": "a"}
    home = homes.generate(homes.SPECS["large"], work / "homes" / "large", settings)
    shutil.rmtree(home / "roam", ignore_errors=True)
    for verb in (("init", "--create-remote"), ("push", "--quiet")):
        subprocess.run([*_roam_cmd(), "--home", str(home), *verb], env=_roam_env(), check=True,
                       stdout=subprocess.DEVNULL)
    plain = made / "plain"
    archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "--format=tar", "roam"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(made / "tree", filter="data")
    (plain / "refs").mkdir(parents=True)
    (made / "tree" / ".roam" / "README.md").unlink()
    head = (made / "tree" / ".roam" / "refs" / "HEAD").read_bytes()
    (plain / "refs" / "HEAD").write_bytes(b"v1\n" + head)
    shutil.rmtree(made / "tree" / ".roam")
    (made / "tree").rename(plain / "objects")
    _device(made / "device-git", {**settings, "device_name": "b"})
    _device(made / "device-local", {"backend": "local", "local_dir": str(plain),
                                    "device_name": "c"})
    for name, path in devices.items():
        (made / f"device-{name}").rename(path)
    return devices


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--other", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--work", type=Path, default=Path("/tmp/roam-bench-git-pull"))
    args = parser.parse_args()
    devices = setup(args.work)
    tools = {"this": (devices["git"], None), "local": (devices["local"], None)}
    for other in args.other:
        name, _, path = other.partition("=")
        tools[name] = (devices["git"], path)
    trash = Trash(args.work / f"trash-{os.getpid()}")
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in tools}
    print(f"load {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    try:
        for run in range(args.runs):
            for name in list(tools) if run % 2 == 0 else list(reversed(tools)):
                template, pythonpath = tools[name]
                copy = args.work / f"pulling-{name}"
                trash.discard(copy)
                subprocess.run(["cp", "-a", str(template), str(copy)], check=True)
                env = _roam_env()
                if pythonpath:
                    env["PYTHONPATH"] = pythonpath
                wall, cpu, rss = measured([*_roam_cmd(), "--home", str(copy), "pull",
                                           "--apply", "--quiet"], env)
                samples[name].append((wall, cpu, rss))
                print(f"  run {run + 1} {name}: {wall:.2f} s wall, {cpu:.2f} s processor, "
                      f"{rss:.0f} MiB, load {os.getloadavg()[0]:.1f}", flush=True)
                trash.discard(copy)
    finally:
        trash.empty()
    for name, found in samples.items():
        walls, cpus, peaks = zip(*found, strict=True)
        print(f"{name}: median {statistics.median(walls):.2f} s wall, "
              f"{statistics.median(cpus):.2f} s processor, peak {max(peaks):.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
