"""Timing one command: wall clock, exit code and the child's peak RSS; the machine's rates."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from roam_core.testing.rss import run_measured


@dataclass
class Sample:
    """One run of one command."""

    wall: float
    rss_mib: float
    code: int
    out: str
    err: str


class CommandFailed(RuntimeError):
    """A measured command exited non-zero; the harness stops rather than report nonsense."""


def run(cmd: list[str], env: dict[str, str], *, cwd: Path | None = None,
            check: bool = True) -> Sample:
    """Run `cmd`; its wall time and its own peak RSS, read by a small launcher process.

    (Reaped from this harness directly, a command would report the harness's peak RSS too:
    see `roam_core.testing.rss`.) The file systems are synced first, untimed: a command
    pays for writing back what it wrote, never for what the previous one left dirty (restic
    does not sync, so its restore left 500 MB for roam's next sync to write).
    """
    os.sync()
    log_out = Path(tempfile.gettempdir()) / f"bench-out-{os.getpid()}.txt"
    log_err = log_out.with_suffix(".err")
    with log_out.open("w") as out_handle, log_err.open("w") as err_handle:
        measured = run_measured(cmd, env=env, cwd=cwd, stdout=out_handle, stderr=err_handle)
    out, err = log_out.read_text(), log_err.read_text()
    log_out.unlink()
    log_err.unlink()
    sample = Sample(measured.wall, measured.peak_mib, measured.code, out, err)
    if check and sample.code != 0:
        raise CommandFailed(f"{' '.join(cmd[:5])}… exited {sample.code}: {err.strip()[:400]}")
    return sample


@dataclass
class Series:
    """Repeated samples of one tool in one scenario."""

    samples: list[Sample] = field(default_factory=list)

    def add(self, sample: Sample) -> Sample:
        self.samples.append(sample)
        return sample

    @property
    def median(self) -> float:
        return statistics.median(s.wall for s in self.samples) if self.samples else float("nan")

    @property
    def peak_rss(self) -> float:
        return max((s.rss_mib for s in self.samples), default=float("nan"))


def _rate(func: object, size: int, seconds: float = 0.6) -> float:
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        func()  # type: ignore[operator]
        count += 1
    return count * size / (time.perf_counter() - started) / 1e6


def rates() -> dict[str, float]:
    """MB/s of what a push spends its time on, measured here and now (noisy machine)."""
    import zstandard
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    data = os.urandom(4 * 1024 * 1024)
    text = (b"agent memory skill tool model prompt context token session reply\n" * 70000)[
        : 4 * 1024 * 1024]
    aead = AESGCM(os.urandom(32))
    nonce = os.urandom(12)
    compressor = zstandard.ZstdCompressor(level=3)
    found = {
        "python hashlib SHA-256 (4 MiB)": _rate(lambda: hashlib.sha256(data).digest(), len(data)),
        "AES-256-GCM (4 MiB, cryptography)": _rate(lambda: aead.encrypt(nonce, data, b""),
                                                   len(data)),
        "zstd level 3 on text": _rate(lambda: compressor.compress(text), len(text)),
    }
    found["openssl speed SHA-256 (machine)"] = _openssl_sha256()
    return found


def _openssl_sha256() -> float:
    if shutil.which("openssl") is None:
        return float("nan")
    try:
        out = subprocess.run(["openssl", "speed", "-seconds", "1", "-bytes", "1048576", "-evp",
                              "sha256"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return float("nan")
    match = re.search(r"^sha256\s+([\d.]+)k", out, re.MULTILINE)
    return float(match.group(1)) * 1000 / 1e6 if match else float("nan")


def machine() -> dict[str, str]:
    """A short description of the machine the numbers come from."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        memory = float("nan")
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", "/tmp"], capture_output=True,
                        text=True).stdout.strip() or "?"
    return {"cpu": f"{model}, {os.cpu_count()} cores", "memory": f"{memory:.0f} GiB",
            "kernel": platform.release(), "python": platform.python_version(),
            "filesystem": fs}


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"
