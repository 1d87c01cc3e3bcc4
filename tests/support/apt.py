"""Installing a Debian package a test needs, once, when the machine lacks it."""

from __future__ import annotations

import fcntl
import os
import subprocess


def ensure_installed(binary: str, package: str) -> str | None:
    """Install `package` with apt when `binary` is missing; the reason it cannot, or None.

    Several test workers may ask at once: one installs under a lock, the others wait.
    """
    if os.path.exists(binary):
        return None
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/apt-get"):
        return f"{binary} is not installed and cannot be installed here (needs root and apt-get)"
    with open(f"/tmp/roam-tests-{package}-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(binary):
            return None
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        wait = ["-o", "DPkg::Lock::Timeout=60"]  # another apt run holding the lock: not forever
        install = ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", package]
        for steps in ([install], [["apt-get", *wait, "update", "-q"], install]):
            try:
                for step in steps:
                    subprocess.run(step, env=env, check=True, capture_output=True, timeout=240)
            except (subprocess.SubprocessError, OSError):
                continue
            if os.path.exists(binary):
                return None
    return f"{package} could not be installed with apt-get"
