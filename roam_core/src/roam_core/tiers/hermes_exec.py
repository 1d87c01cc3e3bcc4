"""Running the real `hermes` CLI for a tier: found, argv only, clean environment, bounded.

roam may run inside Hermes, whose process holds the archive key, cloud secrets and model API
keys. A `hermes` child gets an allowlisted environment (where to find itself, the user's
home, locale, temp folder) plus the `HERMES_HOME` it works on: never a ROAM_* variable or
any other credential. It never gets a shell, its stdin is closed, and it is killed when its
timeout (inside the operation's deadline) runs out.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from roam_core import deadline

#: Variables passed through unchanged when the parent has them; none holds a secret.
ALLOWED = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TEMP", "TMP",
                     "SYSTEMROOT"})
ALLOWED_PREFIXES = ("LC_",)


def find_hermes() -> Path | None:
    """`hermes` next to the running Python (the same environment), else on PATH."""
    beside = Path(sys.executable).parent / "hermes"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("hermes")
    return Path(found) if found else None


def child_env(hermes_home: Path, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a `hermes` child working on `hermes_home`."""
    source = os.environ if parent is None else parent
    env = {name: value for name, value in source.items()
           if name in ALLOWED or name.startswith(ALLOWED_PREFIXES)}
    env["HERMES_HOME"] = str(hermes_home)
    env["NO_COLOR"] = "1"
    env["TERM"] = "dumb"
    return env


@dataclass(frozen=True)
class HermesRun:
    """What one `hermes` child did; `timed_out` means it was killed."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


def run_hermes(executable: Path, args: Sequence[str], hermes_home: Path, *, cwd: Path,
               cap: float) -> HermesRun:
    """Run `hermes ARGS` on `hermes_home`, killed after `cap` s or at the operation deadline."""
    current = deadline.current()
    timeout = current.timeout(cap) if current is not None else cap
    # Its own process group, so a timeout also ends anything Hermes started.
    process = subprocess.Popen([str(executable), *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", cwd=cwd, env=child_env(hermes_home),
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return HermesRun(None, stdout or "", stderr or "", timed_out=True)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return HermesRun(process.returncode, stdout, stderr)
