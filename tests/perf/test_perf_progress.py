"""The progress line: drawn on a terminal only, never with --quiet or --json."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from fleet import Device, new_key, settings_for
from roam_core.cli.progress import Progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_nothing_is_written() -> None:
    stream = io.StringIO()
    progress = Progress("push", stream=stream)
    progress.begin(3, 3 << 20)
    for _ in range(3):
        progress.advance(1 << 20, files=1)
    progress.close()
    assert not progress.enabled
    assert stream.getvalue() == ""


def test_quiet_on_a_terminal_writes_nothing() -> None:
    stream = FakeTerminal()
    progress = Progress("push", quiet=True, stream=stream)
    progress.begin(1, 10)
    progress.advance(10, files=1)
    progress.close()
    assert stream.getvalue() == ""


def test_on_a_terminal_files_bytes_rate_and_eta_then_erased() -> None:
    stream, clock = FakeTerminal(), Clock()
    progress = Progress("pull", stream=stream, clock=clock)
    progress.begin(4, 40 << 20)
    clock.now += 1.0
    progress.advance(10 << 20, files=1)
    line = stream.getvalue()
    assert line.startswith("\rpull: 1/4 files, 10.0/40.0 MiB, 10.0 MiB/s, ETA 3 s"), line
    clock.now += 0.05  # too soon to redraw
    progress.advance(1, files=0)
    assert stream.getvalue() == line
    clock.now += 1.0
    progress.advance(30 << 20, files=3)  # the last file always draws
    assert "4/4 files" in stream.getvalue()
    progress.close()
    assert stream.getvalue().endswith("\r")
    assert max(len(part) for part in stream.getvalue().split("\r")) <= 80


def test_long_etas_read_as_minutes_and_hours() -> None:
    clock = Clock()
    progress = Progress("push", stream=FakeTerminal(), clock=clock)
    progress.begin(2, 10 << 30)
    clock.now += 1
    progress.advance(1 << 20)
    assert "ETA 2 h" in progress.line(clock.now)


def _device(tmp_path: Path) -> Device:
    device = Device(tmp_path / "home", "desk", settings_for("local", tmp_path), new_key())
    for number in range(30):
        device.write(f"skills/s{number}/SKILL.md", f"skill {number}\n" * 200)
    return device


def _run_on_pty(device: Device, *args: str) -> tuple[int, str, str]:
    """Run roam with stderr on a pseudo-terminal (a person's screen), stdout on a pipe."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = device.key
    process = subprocess.Popen([sys.executable, "-m", "roam_core.cli.main", "--home",
                                str(device.root), *args], stdout=subprocess.PIPE,
                               stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = process.communicate(timeout=120)[0]
    os.close(leader)
    return process.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


def test_a_terminal_sees_progress_and_json_never_does(tmp_path: Path) -> None:
    device = _device(tmp_path)
    assert device.roam("init", "--create-remote").code == 0
    code, out, err = _run_on_pty(device, "push")
    assert code == 0, err
    assert re.search(r"push: (\d+)/\1 files", err), err  # drawn, on the terminal only
    assert "push:" not in out

    device.write("memories/MEMORY.md", "§ one more entry\n")
    code, out, err = _run_on_pty(device, "push", "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == ["memories/MEMORY.md"]
    assert "\r" not in err and "files," not in err

    other = Device(tmp_path / "other", "laptop", settings_for("local", tmp_path), device.key)
    assert other.roam("init").code == 0
    code, out, err = _run_on_pty(other, "pull", "--apply", "--json")
    assert code == 0, err
    assert json.loads(out)["applied"] is True
    assert "files," not in err
    other.write("memories/USER.md", "x")
    code, out, err = _run_on_pty(other, "pull", "--apply", "--quiet")
    assert code == 0, err
    assert "files," not in err


def test_pull_apply_on_a_terminal_shows_progress(tmp_path: Path) -> None:
    device = _device(tmp_path)
    assert device.roam("init", "--create-remote").code == 0
    assert device.roam("push", "--quiet").code == 0
    other = Device(tmp_path / "other", "laptop", settings_for("local", tmp_path), device.key)
    assert other.roam("init").code == 0
    code, out, err = _run_on_pty(other, "pull", "--apply")
    assert code == 0, err
    assert re.search(r"pull: (\d+)/\1 files", err), err
    assert "pull:" not in out and "installed" in out


def test_a_count_without_bytes_reads_as_its_own_unit() -> None:
    clock = Clock()
    progress = Progress("stats", stream=FakeTerminal(), clock=clock, unit="trees")
    progress.begin(0, 0)
    progress.advance(0, files=3)
    assert progress.line(clock.now) == "stats: 3 trees"


def _generations(tmp_path: Path) -> Device:
    device = _device(tmp_path)
    assert device.roam("init", "--create-remote").code == 0
    for version in range(3):
        device.write("memories/MEMORY.md", f"version {version}\n")
        assert device.roam("push", "--quiet").code == 0
    return device


def test_stats_and_forget_show_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """Issue 23: stats counts the trees it reads, forget the generations; -q, --json: none."""
    device = _generations(tmp_path)
    for verb, pattern in ((("stats",), r"stats: \d+ trees"),
                          (("forget", "--keep-last", "1"), r"forget: \d+/\d+ generations")):
        code, out, err = _run_on_pty(device, *verb)
        assert code == 0, err
        assert re.search(pattern, err), err  # drawn, on the terminal only
        assert verb[0] + ":" not in out
        for quiet in ("--json", "--quiet"):
            code, out, err = _run_on_pty(device, *verb, quiet)
            assert code == 0, err
            assert "\r" not in err and f"{verb[0]}:" not in err, err
