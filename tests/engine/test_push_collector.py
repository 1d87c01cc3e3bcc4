"""A push pauses Python's cycle collector while it runs, and only while it runs.

A first push makes several records per shared file (the walk's, the packer's tables, the
new manifest's rows) that live for most of it and hold no cycles; with the collector on, each
full collection walked every one of them again: 10 of them cost ~1.4 s of a 100,000-file
first push (issue 22). These tests pin both sides: the walk and the packing run with the
collector off, and it is on again after the push, whether it ended or failed.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import pytest

from fleet import Device
from roam_core.engine import push as push_module
from roam_core.errors import UserError
from roam_core.store.packer import Packer


@pytest.fixture
def device(make_device: Callable[..., Device]) -> Device:
    a = make_device("a")
    a.write("memories/MEMORY.md", "a memory\n")
    assert a.roam("init", "--create-remote").code == 0
    return a


def _watch(monkeypatch: pytest.MonkeyPatch, seen: list[bool],
           fail: Exception | None = None) -> None:
    """Record whether the collector runs while the home is walked and packed (fail if asked)."""
    walk, pack = push_module.home_files, Packer.add_path

    def walked(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return walk(*args, **kwargs)

    def packed(self: Packer, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        if fail is not None:
            raise fail
        return pack(self, *args, **kwargs)

    monkeypatch.setattr(push_module, "home_files", walked)
    monkeypatch.setattr(Packer, "add_path", packed)



@pytest.mark.parametrize("fail", [None, UserError("cannot read the home: planted")],
                         ids=["pushed", "failed"])
def test_the_push_runs_with_the_collector_paused_and_it_is_back_after(
        device: Device, monkeypatch: pytest.MonkeyPatch, collector_on: None,
        fail: UserError | None) -> None:
    seen: list[bool] = []
    _watch(monkeypatch, seen, fail)
    result = device.roam("push", "--json")
    if fail is None:
        assert result.code == 0, result.err
        assert json.loads(result.out)["generation"] == 1
    else:
        assert result.code != 0
        assert "planted" in result.err and "Traceback" not in result.err
    assert seen and not any(seen)
    assert gc.isenabled()
