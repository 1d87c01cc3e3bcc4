"""The remembered status (roam_core.engine.memo): it answers only while nothing changed.

Every test compares a status served by the memo (or refused by it) with a full look made
after deleting the memo, so a memo that answers when it should not shows up as a difference.
Files written by a test are a moment old, which the memo treats as racy (unknown); the tests
that need it to answer set `RACY_NS` to 0, and one test checks the racy rule itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleet import Device
from roam_core.engine import memo
from roam_core.engine import status as status_module
from roam_core.engine.state import load_state, save_state

MEMO = Path("roam/cache/status.json")


def _status(device: Device) -> dict[str, Any]:
    result = device.roam("status", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    report.pop("last_push_device", None)
    return dict(report)


def _full_look(device: Device) -> dict[str, Any]:
    (device.root / MEMO).unlink(missing_ok=True)
    return _status(device)


class _Looks:
    """Counts the full looks (walks of the home) status makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = status_module.list_shared

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(status_module, "list_shared", counted)


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "RACY_NS", 0)  # a file written a moment ago counts as settled


@pytest.fixture
def device(make_device: Callable[..., Device]) -> Device:
    a = make_device("a")
    a.write("SOUL.md", "soul\n")
    a.write("memories/MEMORY.md", "first memory\n")
    a.write("skills/one/SKILL.md", "one\n")
    a.write("skills/two/SKILL.md", "two\n")
    a.write("skins/dark.yaml", "colour: black\n")
    a.write("notes/todo.md", "not shared by default\n")
    a.write("roam/rules.yaml", "local:\n  - skins/light.yaml\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    return a


def _edit_same_size(d: Device) -> None:
    d.write("skills/one/SKILL.md", "ONE\n")


def _append(d: Device) -> None:
    with (d.root / "memories/MEMORY.md").open("a") as handle:
        handle.write("another\n")


def _add_beside(d: Device) -> None:
    d.write("skills/one/notes.md", "notes\n")


def _add_folder(d: Device) -> None:
    d.write("skills/three/SKILL.md", "three\n")


def _delete(d: Device) -> None:
    (d.root / "skills/two/SKILL.md").unlink()


def _chmod(d: Device) -> None:
    os.chmod(d.root / "skills/one/SKILL.md", 0o755)


def _rename(d: Device) -> None:
    os.rename(d.root / "skins/dark.yaml", d.root / "skins/night.yaml")


def _file_becomes_folder(d: Device) -> None:
    (d.root / "skills/two/SKILL.md").unlink()
    d.write("skills/two/SKILL.md/inner.md", "now a folder\n")


def _rules_share_a_folder(d: Device) -> None:
    # rewritten in place: roam/ keeps its signature, only the rules differ
    with (d.root / "roam/rules.yaml").open("r+") as handle:
        handle.truncate(0)
        handle.write("shared:\n  - notes/\n")


def _push_elsewhere_then_pull(d: Device) -> None:
    # the state changes (a new generation), the home's files too
    d.write("SOUL.md", "soul 2\n")
    assert d.roam("push").code == 0


def _state_records_a_conflict(d: Device) -> None:
    state = load_state(d.root / "roam")
    assert state is not None
    state.conflicts = {"SOUL.md": "changed here and in the store"}
    save_state(d.root / "roam", state)


MUTATIONS = [_edit_same_size, _append, _add_beside, _add_folder, _delete, _chmod, _rename,
             _file_becomes_folder, _rules_share_a_folder, _push_elsewhere_then_pull,
             _state_records_a_conflict]


@pytest.mark.usefixtures("settled")
@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda fn: fn.__name__.strip("_"))
def test_a_change_is_never_answered_from_the_memo(
        device: Device, monkeypatch: pytest.MonkeyPatch, mutation: Callable[[Device], None]
) -> None:
    looks = _Looks(monkeypatch)
    first = _status(device)
    assert (device.root / MEMO).exists()
    assert _status(device) == first
    assert looks.count == 1  # the second status was answered by the memo
    mutation(device)
    after = _status(device)
    assert looks.count == 2  # the change made it look again
    assert after == _full_look(device)
    assert after != first


@pytest.mark.usefixtures("settled")
def test_a_damaged_memo_means_a_full_look(device: Device,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    first = _status(device)
    for damage in (b"", b"{not json", b'{"v": 2, "key": 1}', b"[]",
                   json.dumps({"v": 2, "key": None, "folders": [[1, 2]]}).encode()):
        (device.root / MEMO).write_bytes(damage)
        looks = _Looks(monkeypatch)
        assert _status(device) == first
        assert looks.count == 1


def test_what_changed_just_now_is_recorded_as_unknown(device: Device,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock behind mtime and ctime is coarse: a change in the same tick as the look
    would keep the old signature, so what changed within RACY_NS of the look never matches."""
    device.write("skills/one/SKILL.md", "just written\n")
    _status(device)
    data = json.loads((device.root / MEMO).read_bytes())
    folders = {rel: signature for rel, signature, _names, _digest in data["folders"]}
    assert folders["skills/one"] is None
    looks = _Looks(monkeypatch)
    _status(device)
    assert looks.count == 1  # not answered from the memo
