"""A command's own peak RSS and wall time, measured from a small launcher process.

Reaping a child with `os.wait4` and reading `ru_maxrss` is not enough on Linux: `exec`
folds the high-water RSS of the address space it replaces into the new program's
`maxrss`, and a child made with `vfork` (what `subprocess` uses) replaces its *parent's*
address space. A command started from a 300 MiB test worker therefore reports at least
300 MiB whatever it used itself. Here a fresh interpreter of ~10 MiB starts the command,
reaps it and reports its numbers through a pipe, so only the command is measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

_LAUNCHER = """
import os, subprocess, sys, time
report = int(sys.argv[1])
started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_pid, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
os.write(report, f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} {wall}".encode())
"""


@dataclass(frozen=True)
class Measured:
    """How one command ended: exit code, its own peak RSS and its wall time."""

    code: int
    peak_kib: int
    wall: float

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024


def run_measured(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None, stdin: IO[Any] | int | None = subprocess.DEVNULL,
                 stdout: IO[Any] | int | None = None,
                 stderr: IO[Any] | int | None = None) -> Measured:
    """Run `argv` to completion and measure it; stdio are files, `DEVNULL` or inherited.

    Pipes are refused: nothing would read them while the command runs.
    """
    if subprocess.PIPE in (stdin, stdout, stderr):
        raise ValueError("run_measured: give files, not pipes, for the command's stdio")
    read_end, write_end = os.pipe()
    try:
        launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(write_end), *argv],
                                    env=None if env is None else dict(env), cwd=cwd,
                                    stdin=stdin, stdout=stdout, stderr=stderr,
                                    pass_fds=(write_end,))
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        report = reader.read().decode()
    launcher.wait()
    if launcher.returncode != 0 or len(report.split()) != 3:
        raise RuntimeError(f"the measuring launcher failed (exit {launcher.returncode}) "
                           f"running {argv[0]!r}")
    code, peak, wall = report.split()
    return Measured(int(code), int(peak), float(wall))
