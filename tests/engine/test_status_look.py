"""A full-look status pauses Python's cycle collector for the look, and only for it.

The look makes several records per shared file that all live to its end; with the collector
on, each collection walks every one of them again (issue 22: ~20 % of the walk's processor
time at 100,000 files). These tests pin both sides: the walk and the comparison run with the
collector off, and it is on again after the look, whether the look ended or failed.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import pytest

from fleet import Device
from roam_core.engine import status as status_module
from roam_core.errors import UserError


@pytest.fixture
def device(make_device: Callable[..., Device]) -> Device:
    a = make_device("a")
    a.write("SOUL.md", "soul\n")
    a.write("skills/one/SKILL.md", "one\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    a.write("skills/two/SKILL.md", "two\n")
    (a.root / "roam/cache/status.json").unlink(missing_ok=True)
    return a


def _watch(monkeypatch: pytest.MonkeyPatch, seen: list[bool],
           fail: Exception | None = None) -> None:
    """Record whether the collector runs while the home is walked (and fail there if asked)."""
    real = status_module.list_shared

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        if fail is not None:
            raise fail
        return real(*args, **kwargs)

    monkeypatch.setattr(status_module, "list_shared", watched)


def test_the_look_runs_with_the_collector_paused_and_it_is_back_after(
        device: Device, monkeypatch: pytest.MonkeyPatch, collector_on: None) -> None:
    seen: list[bool] = []
    _watch(monkeypatch, seen)
    result = device.roam("status", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["changes"]["added"] == ["skills/two/SKILL.md"]
    assert seen == [False]
    assert gc.isenabled()


def test_a_failed_look_turns_the_collector_back_on(
        device: Device, monkeypatch: pytest.MonkeyPatch, collector_on: None) -> None:
    seen: list[bool] = []
    _watch(monkeypatch, seen, fail=UserError("cannot read the home: planted"))
    result = device.roam("status", "--json")
    assert result.code != 0
    assert "planted" in result.err and "Traceback" not in result.err
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_someone_turned_off_stays_off(device: Device,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        seen: list[bool] = []
        _watch(monkeypatch, seen)
        assert device.roam("status", "--json").code == 0
        assert seen == [False]
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()

