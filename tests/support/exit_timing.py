"""How long a real `hermes chat -q` process lives after its turn ended (the mirror's cost).

The turn's end is when Hermes logged "Turn ended:" in the home's agent.log (its own
timestamp, millisecond resolution, this machine's clock; logged with the mirror on or off);
the process's exit is when `waitpid` returned in the parent. roam's own share is when its
sender let the exit go, which it logs ("sender let go at exit … s after the turn"). Used by
tests/mirror/test_e2e_exit.py and by bench/mirror_exit.py.
"""

from __future__ import annotations

import datetime
import re
import subprocess
import time

from support.hermes_env import HermesHome

_ENDED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO .*Turn ended:", re.M)
_HELD = re.compile(r"sender let go at exit after [\d.]+ s \(([\d.]+) s after the turn\)")


def _turn_ends(home: HermesHome) -> list[float]:
    try:
        text = (home.path / "logs" / "agent.log").read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
            for stamp in _ENDED.findall(text)]


def exit_holds(home: HermesHome) -> list[float]:
    """When roam's sender let each exit go, in seconds after the turn, as it logged it."""
    try:
        text = (home.path / "logs" / "agent.log").read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [float(seconds) for seconds in _HELD.findall(text)]


def exit_delay(home: HermesHome, prompt: str, timeout: float = 180) -> float:
    """Seconds from the turn's end to the process's exit, for one `hermes chat -q` turn."""
    before = len(_turn_ends(home))
    proc = subprocess.Popen([str(home.venv.hermes), "chat", "-q", prompt, "-Q"],
                            cwd=home.workdir, env=home.env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    exited = time.time()
    if proc.returncode != 0:
        raise AssertionError(f"hermes exited {proc.returncode}: {out[-2000:]}{err[-2000:]}")
    ends = _turn_ends(home)
    if len(ends) <= before:
        raise AssertionError("Hermes logged no 'Turn ended:' line for the turn")
    return exited - ends[-1]
