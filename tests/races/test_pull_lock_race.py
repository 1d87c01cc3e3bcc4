"""Two `pull --apply` on one home at once: the home's lock serialises them.

Either both succeed one after the other, or one fails fast saying another roam command is
running; never two installs interleaved. Afterwards the home is exactly what one pull
installs, no journal or temp file is left, and the store checks clean.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, fast_dir, stores
from test_push_races import race

ROUNDS = 4


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Home, Home, Path]]:
    with fast_dir("roam-pull-race-") as root, stores("local", root, request) as store:
        runner = Runner()
        yield Home(root / "a", "a", store, runner), Home(root / "b", "b", store, runner), root


def _publish(a: Home, number: int) -> None:
    for index in range(6):  # enough files that two installs would overlap if unlocked
        a.write(f"skills/s{index}/SKILL.md", f"skill {index}, round {number}\n" * 200)
    a.write("SOUL.md", f"soul {number}\n")
    assert a.roam("push").code == 0


def test_two_pulls_on_one_home_are_serialised(pair: tuple[Home, Home, Path]) -> None:
    a, b, root = pair
    a.write("SOUL.md", "soul 0\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    for number in range(1, ROUNDS + 1):
        _publish(a, number)
        control = b.copy(root / "control")
        assert control.roam("pull", "--apply").code == 0
        after = control.files()
        shutil.rmtree(control.root)
        twin = Home.__new__(Home)
        twin.__dict__.update(b.__dict__, name="b-twin")
        results = race([b, twin], root / "go", "pull", "--apply")
        codes = sorted(r.returncode for r in results)
        assert codes in ([0, 0], [0, 1]), [(r.returncode, r.stderr) for r in results]
        for result in results:
            if result.returncode == 1:
                assert "another roam command is running" in result.stderr, result.stderr
        assert b.files() == after, f"round {number}: the home is not what one pull installs"
        assert not (b.root / "roam" / "journal.json").exists()
        assert not [p for p in b.root.rglob("*") if ".roam-tmp-" in p.name]
    report = b.roam("check", "--json")
    assert report.code == 0, report.out
    assert b.roam("status", "--json").json()["behind"] is False


def test_a_held_lock_fails_fast_with_the_reason(pair: tuple[Home, Home, Path]) -> None:
    a, b, _root = pair
    a.write("SOUL.md", "soul\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    fd = os.open(b.root / "roam" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another roam process, as far as b can tell
        started = time.monotonic()
        result = b.run("pull", "--apply", timeout=30)
        assert time.monotonic() - started < 10
    finally:
        os.close(fd)
    assert result.returncode == 1
    assert result.stderr.strip() == ("roam: another roam command is running on this home; "
                                     "try again when it finishes")
    assert "SOUL.md" not in b.files()
    assert b.roam("pull", "--apply").code == 0 and b.files()["SOUL.md"] == b"soul\n"
