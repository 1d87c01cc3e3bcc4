"""Issue 19 (7): a store whose HEAD is lost, damaged or replayed, with its snapshots intact.

`roam check` names `roam check --repair` (never `init --create-remote`, which would found a
new fleet every other device then refuses), and the repair re-publishes HEAD from the newest
authentic snapshot, never below the floor, after which every device pulls and pushes again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, stores
from campaign.hostile import damage_head, drop_head, head_state, replay_head

pytest_plugins = ("support.s3_servers",)


@pytest.fixture(params=["local", "s3", "git"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with stores(request.param, tmp_path / "store", request) as found:
        yield found


def _fleet(store: Store, tmp_path: Path) -> tuple[Home, Home, object]:
    """Devices a and b at generation 2; returns HEAD as it was at generation 1."""
    runner = Runner()
    a, b = Home(tmp_path / "a", "a", store, runner), Home(tmp_path / "b", "b", store, runner)
    a.write("SOUL.md", "soul v1\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    old = head_state(store)
    a.write("SOUL.md", "soul v2\n")
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    return a, b, old


def _recovered(a: Home, b: Home) -> None:
    checked = a.roam("check")
    assert checked.code == 1, checked.out + checked.err
    advice = checked.out + checked.err
    assert "roam check --repair" in advice and "--create-remote" not in advice, advice
    repaired = a.roam("check", "--repair")
    assert repaired.code == 0, repaired.out + repaired.err
    assert "HEAD re-published at generation 2" in repaired.out, repaired.out
    assert a.roam("check").code == 0
    b.write("memories/MEMORY.md", "after the repair\n")
    pushed = b.roam("push")
    assert pushed.code == 0, pushed.err
    pulled = a.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert a.files()["memories/MEMORY.md"] == b"after the repair\n"
    assert a.files()["SOUL.md"] == b"soul v2\n"


@pytest.mark.parametrize("hurt", [drop_head, damage_head], ids=["lost", "damaged"])
def test_a_lost_or_damaged_head_is_republished(store: Store, tmp_path: Path,
                                               hurt: Callable[[Store], None]) -> None:
    a, b, _old = _fleet(store, tmp_path)
    hurt(store)
    pulled = b.roam("pull")
    assert pulled.code == 1 and "roam check --repair" in pulled.err, pulled.err
    _recovered(a, b)


def test_a_replayed_head_is_republished_at_the_newest_snapshot(store: Store,
                                                             tmp_path: Path) -> None:
    a, b, old = _fleet(store, tmp_path)
    replay_head(store, old)
    assert "rollback refused" in b.roam("pull").err
    _recovered(a, b)


def test_a_device_without_state_is_told_who_can_repair(store: Store, tmp_path: Path) -> None:
    a, _b, _old = _fleet(store, tmp_path)
    drop_head(store)
    c = Home(tmp_path / "c", "c", store, Runner())
    joined = c.roam("init")
    assert joined.code == 1
    assert "roam check --repair" in joined.err and "--create-remote" not in joined.err
    assert a.roam("check", "--repair").code == 0
    assert c.roam("init").code == 0
    assert c.roam("pull", "--apply").code == 0
    assert c.files()["SOUL.md"] == b"soul v2\n"
