"""`push --force` asks before it removes much of the remote (issue 25, item 6)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Callable

import pytest

from fleet import Device


def published(make_device: Callable[..., Device], files: int) -> tuple[Device, Device]:
    desk, laptop = make_device("desk"), make_device("laptop")
    for number in range(files):
        desk.write(f"skills/notes/n{number}/SKILL.md", f"note {number}\n")
    desk.roam("init", "--create-remote")
    assert desk.roam("push").code == 0
    laptop.roam("init")
    return desk, laptop


def test_a_device_that_never_pulled_is_refused_without_a_terminal(
        make_device: Callable[..., Device]) -> None:
    desk, laptop = published(make_device, 12)
    laptop.write("SOUL.md", "laptop soul\n")
    refused = laptop.roam("push", "--force")
    assert refused.code == 1
    assert "never pulled" in refused.err and "--yes" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert "would remove: skills/notes/n0/SKILL.md" in refused.out
    assert desk.roam("pull").out.count("removed:") == 0        # nothing was published
    done = laptop.roam("push", "--force", "--yes")
    assert done.code == 0, done.err
    assert "12 removed" in done.out


def test_a_small_forced_push_goes_through_and_a_large_one_asks(
        make_device: Callable[..., Device]) -> None:
    desk, laptop = published(make_device, 20)
    laptop.roam("pull", "--apply")
    desk.write("skills/notes/extra/SKILL.md", "one more\n")
    desk.roam("push")
    laptop.write("SOUL.md", "mine\n")
    small = laptop.roam("push", "--force")                      # 1 of 21 paths: under 20 %
    assert small.code == 0, small.err
    assert "1 removed" in small.out
    desk.roam("pull", "--apply")
    for number in range(8):
        desk.write(f"skills/more/m{number}/SKILL.md", "more\n")
    desk.roam("push")
    laptop.write("SOUL.md", "mine again\n")
    large = laptop.roam("push", "--force")                      # 8 of 29 paths: over 20 %
    assert large.code == 1 and "8 of" in large.err


def test_on_a_terminal_the_forced_push_asks_and_takes_the_answer(
        make_device: Callable[..., Device], backend_kind: str) -> None:
    if backend_kind == "memory":
        pytest.skip("a real process cannot reach the in-process memory store")
    _desk, laptop = published(make_device, 3)
    laptop.write("SOUL.md", "laptop soul\n")

    def answer(reply: bytes) -> subprocess.CompletedProcess[bytes]:
        controller, terminal = pty.openpty()
        os.write(controller, reply)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
        env["ROAM_ARCHIVE_KEY"] = laptop.key
        try:
            return subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home",
                                   str(laptop.root), "push", "--force"], stdin=terminal,
                                  capture_output=True, env=env, timeout=120)
        finally:
            os.close(terminal)
            os.close(controller)

    no = answer(b"n\n")
    assert no.returncode == 1 and b"would remove: skills/notes/n0/SKILL.md" in no.stdout
    assert b"[y/N]" in no.stdout
    yes = answer(b"y\n")
    assert yes.returncode == 0, yes.stderr
    assert b"3 removed" in yes.stdout
