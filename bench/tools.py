"""The two tools side by side: roam (this checkout's venv) and restic (installed with apt)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from measure import Sample, run

REPO = Path(__file__).resolve().parent.parent
ARCHIVE_KEY = "ab" * 32
RESTIC_PASSWORD = "bench-password"


def ensure_restic() -> str:
    """The restic binary; installed with apt-get when missing (said so on stderr)."""
    found = shutil.which("restic")
    if found:
        return found
    print("bench: restic is missing; installing it with apt-get (Debian package restic)",
          file=sys.stderr)
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    prefix = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*prefix, "apt-get", "update", "-q"], **quiet)  # type: ignore[call-overload]
    subprocess.run([*prefix, "apt-get", "install", "-y", "-q", "restic"],  # type: ignore[call-overload]
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, **quiet)
    found = shutil.which("restic")
    if not found:
        raise SystemExit("bench: restic could not be installed")
    return found


class Trash:
    """Trees a scenario is done with, moved aside and deleted only when the run ends.

    Deleting thousands of files right before a measured command makes that command's file
    creation slow on an ext4 without a journal (this machine's): the inode allocator skips
    inodes freed in the last 60-360 s one by one (`recently_deleted` in fs/ext4/ialloc.c),
    which cost both tools ~10 s per 20,000 files created and buried their real difference.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def discard(self, path: Path) -> None:
        if not path.exists():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count += 1
        path.rename(self.folder / f"{self.count}-{path.name}")

    def empty(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _clean_env() -> dict[str, str]:
    # roam runs as installed: its modules' bytecode is cached, never recompiled per run
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("ROAM_", "HERMES_", "RESTIC_"))
            and k != "PYTHONDONTWRITEBYTECODE"}


def run_cli_here(*args: str) -> None:
    """Run `roam ARGS` in this process (to profile or trace it); a non-zero exit is raised."""
    from roam_core.cli.main import main

    sys.argv = ["roam", *args]
    try:
        main()
    except SystemExit as stop:
        if stop.code:
            raise


def compile_roam() -> None:
    """Write the bytecode of this checkout's packages, as an install does."""
    sources = [str(path) for path in REPO.glob("roam_*/src")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *sources], check=True,
                   env=_clean_env(), stdout=subprocess.DEVNULL)


class Roam:
    """The roam CLI of the venv running this harness, on one home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        script = Path(sys.executable).with_name("roam")
        self.cmd = [str(script)] if script.exists() else [sys.executable, "-m",
                                                          "roam_core.cli.main"]
        self.env = {**_clean_env(), "ROAM_ARCHIVE_KEY": ARCHIVE_KEY}

    def __call__(self, *args: str, check: bool = True) -> Sample:
        return run([*self.cmd, "--home", str(self.home), *args], self.env, check=check)

    def version(self) -> Sample:
        return run([*self.cmd, "--version"], self.env)


class Restic:
    """restic on one local repository, backing up an explicit list of files."""

    def __init__(self, binary: str, repo: Path, cache: Path, trash: Trash) -> None:
        self.binary = binary
        self.trash = trash
        self.repo = repo
        self.env = {**_clean_env(), "RESTIC_REPOSITORY": str(repo),
                    "RESTIC_PASSWORD": RESTIC_PASSWORD, "RESTIC_CACHE_DIR": str(cache)}

    def __call__(self, *args: str, cwd: Path | None = None, check: bool = True) -> Sample:
        return run([self.binary, "--quiet", *args], self.env, cwd=cwd, check=check)

    def init(self) -> None:
        self.trash.discard(self.repo)
        self("init")

    def backup(self, home: Path, file_list: Path) -> Sample:
        # relative paths from inside the home, the same shared set roam publishes
        return self("backup", "--files-from-verbatim", str(file_list), "--host", "bench",
                    cwd=home)

    def version(self) -> str:
        return subprocess.run([self.binary, "version"], capture_output=True,
                              text=True).stdout.strip()
