"""Processor time and peak RSS of every process a bench step starts, read from /proc.

`RUSAGE_CHILDREN` sums a whole process tree and reports only its largest peak, so it cannot
say whether 633 MiB belonged to roam or to a git child. This watcher samples /proc every
`interval` seconds and keeps, per process that appeared after it started, its parent, its
name, its last processor time and its `VmHWM` (the kernel's own high-water mark, so a peak
between two samples is not missed; only the last `interval` of processor time can be).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    """What was last seen of one process."""

    pid: int
    ppid: int
    name: str
    cpu: float = 0.0
    hwm_mib: float = 0.0
    anon_mib: float = 0.0
    first: float = 0.0
    last: float = 0.0
    args: str = ""


@dataclass
class ProcWatch:
    """Samples every process newer than the watcher until `stop`."""

    interval: float = 0.02
    procs: dict[int, Proc] = field(default_factory=dict)
    _known: set[int] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ProcWatch:
        self._known = {int(p.name) for p in Path("/proc").glob("[0-9]*")}
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        import time

        while not self._stop.is_set():
            now = time.monotonic()
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                pid = int(entry.name)
                if pid in self._known and pid not in self.procs:
                    continue
                self._sample(pid, now)
            self._stop.wait(self.interval)

    def _sample(self, pid: int, now: float) -> None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rpartition(")")[2].split()
        ppid = int(fields[1])
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        hwm = anon = 0.0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1]) / 1024
        proc = self.procs.get(pid)
        if proc is None:
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                args = b""
            proc = self.procs[pid] = Proc(pid, ppid, name, first=now,
                                          args=args.decode("utf-8", "replace")[:300])
        elif name != proc.name:  # exec'd since: keep the latest program's name
            proc.name = name
            try:
                proc.args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(
                    b"\0", b" ").decode("utf-8", "replace")[:300]
            except OSError:
                pass
        proc.cpu = max(proc.cpu, cpu)
        proc.hwm_mib = max(proc.hwm_mib, hwm)
        proc.anon_mib = max(proc.anon_mib, anon)
        proc.last = now

    def under(self, root: int) -> list[Proc]:
        """The watched processes descending from `root` (by the parents first seen)."""
        out = []
        for proc in self.procs.values():
            at, seen = proc.ppid, set()
            while at not in seen:
                if at == root:
                    out.append(proc)
                    break
                seen.add(at)
                parent = self.procs.get(at)
                if parent is None:
                    break
                at = parent.ppid
        return out


def label(proc: Proc) -> str:
    """A short name: git's subcommand for git processes, else the program's name."""
    words = proc.args.split()
    if proc.name.startswith("git") and words:
        sub = [w for w in words[1:] if not w.startswith("-") and "=" not in w
               and not w.startswith("/")]
        if words[0].endswith("git") and sub:
            return f"git {sub[0]}"
        return Path(words[0]).name
    if "roam" in proc.args and "python" in proc.name:
        return "roam (python)"
    return proc.name
