"""A reader that takes no lock must not call a push of the same home, landing meanwhile, a rollback.

`roam status`, `roam history` and the service's check (the Discord sink's) read the store
without the home's lock, so a push or pull of the same home (a Hermes hook's auto sync, a
cron tick) may run beside them and raise the floor. The floor is only raised to a generation
the store served or accepted, so a floor read *before* HEAD is a true lower bound for it;
read after, it may hold a generation published after this reader's HEAD read, and the reader
refused a healthy store with "rollback refused … roam check --repair". The prune race test
met it: its forget and prune ran in the test's process on the first device's state while
that device's pushes ran (seen once under load, on S3).

The interleaving is forced, not waited for: the reader's first HEAD read returns, then a real
`roam push` of the same home runs in its own process and lands (generation 2, floor 2), then
the reader goes on with the generation 1 it read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleet import Device, new_key
from roam_core.service import review
from roam_core.store.objects import Head
from roam_core.store.repository import Repository


def _pushed_once(tmp_path: Path) -> Device:
    dev = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(tmp_path / "store")},
                 new_key())
    dev.write("SOUL.md", "soul v1\n")
    assert dev.roam("init", "--create-remote").code == 0
    assert dev.roam("push").code == 0
    return dev


def _push_lands_after_the_first_head_read(monkeypatch: pytest.MonkeyPatch, dev: Device
                                          ) -> list[int]:
    """Make the next HEAD read in this process return, then a push of `dev` land elsewhere.

    Returns the generations the other process published (one, once the hook has fired).
    """
    real: Callable[[Repository], Head | None] = Repository.read_head
    published: list[int] = []

    def read_head(repo: Repository) -> Head | None:
        head = real(repo)
        if not published and head is not None:
            dev.write("SOUL.md", f"soul after generation {head.generation}\n")
            pushed = dev.run("push", "--json")  # its own process, under the home's lock
            assert pushed.returncode == 0, pushed.stdout + pushed.stderr
            published.append(json.loads(pushed.stdout)["generation"])
        return head

    monkeypatch.setattr(Repository, "read_head", read_head)
    return published


def _floor(dev: Device) -> int:
    stores = json.loads((dev.root / "roam" / "floor.json").read_text())["stores"]
    return max(entry["generation"] for entry in stores.values())


@pytest.mark.parametrize("verb", [("status",), ("history",)])
def test_an_unlocked_reader_beside_a_push_of_its_home_is_no_rollback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: tuple[str, ...]) -> None:
    dev = _pushed_once(tmp_path)
    published = _push_lands_after_the_first_head_read(monkeypatch, dev)
    result = dev.roam(*verb)
    assert published == [2] and _floor(dev) == 2  # the push landed mid-read
    assert "rollback refused" not in result.out + result.err, result.out + result.err
    assert result.code == 0, result.out + result.err


def test_the_services_check_beside_a_push_of_its_home_reports_no_rollback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _pushed_once(tmp_path)
    published = _push_lands_after_the_first_head_read(monkeypatch, dev)
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", dev.key)
    notes: list[Any] = []
    record = review.check(dev.root, notes.append)
    assert published == [2] and _floor(dev) == 2
    problems = record.as_json()
    assert "rolled back" not in json.dumps(problems), problems
    assert record.exit_code == 0, problems
