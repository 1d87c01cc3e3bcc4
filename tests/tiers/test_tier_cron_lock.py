"""Hermes's cron lock: held around installs, bounded, failing closed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.errors import LockedError
from roam_core.tiers import cron_lock
from support.locks import flock_held


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """`cron/.jobs.lock` of a home, flocked by another process for the test."""
    lock = tmp_path / "cron" / ".jobs.lock"
    lock.parent.mkdir()
    with flock_held(lock):
        yield tmp_path


def test_a_lock_held_elsewhere_fails_after_the_bounded_wait(held: Path) -> None:
    started = time.monotonic()
    with pytest.raises(LockedError) as caught, \
            cron_lock.holding(held, ["cron/jobs.json"], wait=0.3):
        pytest.fail("entered the block without the lock")
    assert 0.25 <= time.monotonic() - started < 5
    assert "held by another process" in str(caught.value)
    assert "nothing was written" in str(caught.value)


def test_the_default_wait_is_hermes_own_bound() -> None:
    assert cron_lock.WAIT_SECONDS == 30.0


def test_the_deadline_shortens_the_wait(held: Path) -> None:
    from roam_core import deadline

    started = time.monotonic()
    with deadline.running(deadline.Deadline.after(0.3, "pull")), pytest.raises(LockedError), \
            cron_lock.holding(held, ["cron/jobs.json"]):
        pass
    assert time.monotonic() - started < 5


def test_a_free_lock_is_taken_and_released(tmp_path: Path) -> None:
    with cron_lock.holding(tmp_path, ["profiles/work/cron/jobs.json", "SOUL.md"], wait=0):
        lock = tmp_path / "profiles/work/cron/.jobs.lock"
        assert lock.exists()
        probe = subprocess.run(
            [sys.executable, "-c", "import fcntl, sys\nf = open(sys.argv[1], 'a+')\n"
             "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n"
             "    sys.exit(3)", str(lock)], check=False)
        assert probe.returncode == 3               # another process sees it held
    with cron_lock.holding(tmp_path, ["profiles/work/cron/jobs.json"], wait=0):
        pass                                       # released: taken again at once


def test_no_jobs_file_no_lock(tmp_path: Path) -> None:
    assert cron_lock.lock_paths(tmp_path, ["SOUL.md", "memories/MEMORY.md"]) == []
    with cron_lock.holding(tmp_path, ["SOUL.md"]):
        pass
    assert not (tmp_path / "cron").exists()
