"""The transfer deadline is sized to the work unless the user set one (issue 24)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from roam_core import deadline
from roam_core.engine.check import check
from roam_core.engine.pull import pull
from roam_core.engine.push import push
from roam_core.engine.session import Session
from roam_core.errors import DeadlineExceeded
from roam_core.home import Home

BASE = 2.0
RATE = 1024  # bytes a second: a 64 KiB home needs a minute at this floor


@pytest.fixture
def slow_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small base and a slow floor, so a small home plans more than the base."""
    for operation in ("push", "pull", "check"):
        monkeypatch.setitem(deadline.BUDGETS, operation, BASE)
    monkeypatch.setattr(deadline, "FLOOR_RATE", RATE)


def _transfer(device: Device, operation: str, monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", device.key)
    session = Session.open(Home(device.root), operation)
    with deadline.running(session.deadline):
        if operation == "push":
            assert not push(session).nothing
        elif operation == "pull":
            assert pull(session, apply=True).applied
        else:
            assert check(session, read_data=True).ok
    session.close()
    return session


def _fleet(tmp_path: Path) -> tuple[Device, Device]:
    settings, key = settings_for("local", tmp_path), new_key()
    a, b = (Device(tmp_path / name, name, settings, key) for name in ("a", "b"))
    for number in range(4):
        a.write(f"skills/s{number}/SKILL.md", os.urandom(16 * 1024))
    assert a.roam("init", "--create-remote").code == 0
    assert b.roam("init").code == 0
    return a, b


def test_an_unset_deadline_grows_with_the_bytes_a_push_a_pull_and_a_check_move(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_floor: None) -> None:
    a, b = _fleet(tmp_path)
    # the four skills, and the few small files roam adds itself (its plugin inventory)
    needed = 4 * 16 * 1024 / RATE + 4 * deadline.PER_OBJECT_SECONDS
    pushed = _transfer(a, "push", monkeypatch).deadline
    assert needed <= pushed.budget < needed + 10, pushed
    pulled = _transfer(b, "pull", monkeypatch).deadline
    assert needed <= pulled.budget < needed + 10, pulled
    checked = _transfer(b, "check", monkeypatch).deadline  # --read-data reads every file
    assert needed <= checked.budget < needed + 10, checked
    assert (b.root / "skills/s3/SKILL.md").read_bytes() == \
        (a.root / "skills/s3/SKILL.md").read_bytes()


def test_an_explicit_deadline_is_honoured_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_floor: None) -> None:
    a, _b = _fleet(tmp_path)
    assert a.roam("config", "set", "operation_timeout_seconds", "30").code == 0
    assert _transfer(a, "push", monkeypatch).deadline.budget == 30


def test_a_small_transfer_keeps_the_base() -> None:
    sized = deadline.Deadline.for_operation("push")
    sized.size_to(1024, 1)
    assert sized.budget == deadline.BUDGETS["push"] == 3600
    sized.size_to(10 << 30, 2000)  # a 10 GiB first push: hours, not the hour the base gives
    assert sized.budget == pytest.approx((10 << 30) / deadline.FLOOR_RATE + 1000)
    assert deadline.Deadline.for_operation("status").sized is False


def test_a_sized_deadline_that_runs_out_says_how_to_resume_and_how_to_give_more() -> None:
    spent = deadline.Deadline(0.0, "push", 4000.0, sized=True)
    with pytest.raises(DeadlineExceeded) as raised:
        spent.check()
    assert str(raised.value) == (
        "push ran out of time after 4000 s (sized to the work; set operation_timeout_seconds "
        "to give it more); run roam push again to resume where it stopped")
