"""The optional tiers with the real Hermes 0.19 CLI, offline against the stub model.

A desk home gets real sessions (`hermes -z` turns, at the root and in profile `work`) and a
real cron job (`hermes cron create`); it pushes, a laptop home pulls. Each test copies the
desk (made once per module) and has a store of its own.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hermes_fleet import clone, jobs, join, make_desk, new_key, ok, roam_inprocess, tree_bytes

from roam_core.tiers import cron_lock
from support.hermes_env import HermesHome, HomeFactory
from support.locks import flock_held
from support.state_files import read_state

pytestmark = pytest.mark.hermes


@pytest.fixture(scope="module")
def desk_template(hermes_homes: HomeFactory) -> HermesHome:
    return make_desk(hermes_homes)


@pytest.fixture
def pair(desk_template: HermesHome, hermes_homes: HomeFactory, tmp_path: Path) -> Any:
    """`pair(**settings)`: (desk copy, fresh laptop) on one new store, both set up."""

    def make(**settings: Any) -> tuple[HermesHome, HermesHome]:
        key, store = new_key(), tmp_path / "store"
        desk = join(clone(desk_template, tmp_path / "desk"), "desk", store, key, **settings)
        laptop = join(hermes_homes.new("laptop"), "laptop", store, key, **settings)
        return desk, laptop

    return make


def test_session_archive_lands_read_only_is_listed_and_never_travels_back(pair: Any) -> None:
    desk, laptop = pair(sync_sessions=True)
    ok(desk.roam("init", "--create-remote"))
    pushed = json.loads(ok(desk.roam("push", "--json")).stdout)
    assert pushed["session_archive"]["sessions"] == 2, pushed
    archived = sorted(p for p in pushed["added"] if p.startswith("archive/sessions/"))
    assert [p.split("/")[3] for p in archived] == ["default", "work"]
    desk_id = read_state(desk.path)["device_id"]
    assert all(p.startswith(f"archive/sessions/{desk_id}/") for p in archived)
    assert not any(p.startswith(("sessions/", "state.db")) for p in pushed["added"])
    # A re-export stamps a new time into every file: still nothing to push.
    assert json.loads(ok(desk.roam("push", "--json")).stdout)["nothing_to_push"] is True

    ok(laptop.roam("init"))
    pulled = laptop.roam("pull", "--apply", "--overwrite-conflicts")
    ok(pulled)
    assert "session archive added: 1 transcript(s) from desk/default" in pulled.stdout
    landed = sorted((laptop.path / f"roam/session-archive/{desk_id}").rglob("*.md"))
    assert [p.parent.name for p in landed] == ["default", "work"]
    for path in landed:
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
    listed = json.loads(ok(laptop.roam("sessions", "--json")).stdout)
    assert [(r["device"], r["profile"]) for r in listed] == [(desk_id, "default"),
                                                             (desk_id, "work")]
    assert all(r["size"] > 0 and r["date"] for r in listed)
    root_id = listed[0]["session_id"]
    shown = ok(laptop.roam("sessions", "show", desk_id, "default", root_id)).stdout
    assert "remember the desk" in shown and "STUB-REPLY: hello from the stub" in shown
    assert f"{desk_id} / default:" in ok(laptop.roam("sessions")).stdout

    # The laptop publishes its own namespace; the desk's is carried, never re-pushed.
    ok(laptop.oneshot("a laptop question"))
    again = json.loads(ok(laptop.roam("push", "--json")).stdout)
    laptop_id = read_state(laptop.path)["device_id"]
    assert [p.split("/")[2] for p in again["added"] if p.startswith("archive/")] == [laptop_id]
    assert not [p for p in again["removed"] if p.startswith(f"archive/sessions/{desk_id}/")]
    assert not [p for p in again["added"] if p.startswith("roam/")]
    back = ok(desk.roam("pull", "--apply"))
    assert "from laptop/default" in back.stdout
    assert (desk.path / f"roam/session-archive/{laptop_id}/default").is_dir()
    assert not (desk.path / f"roam/session-archive/{desk_id}").exists()   # never its own
    assert json.loads(ok(desk.roam("push", "--json")).stdout)["nothing_to_push"] is True


def test_cron_jobs_land_paused_and_a_resume_stays_local(pair: Any) -> None:
    desk, laptop = pair(sync_cron=True)
    ok(laptop.hermes("cron", "create", "every 1h", "laptop only", "--name", "laptop-job"))
    (laptop_job,) = jobs(laptop)
    ok(desk.roam("init", "--create-remote"))
    (desk_job,) = jobs(desk)
    (desk.path / "memories").mkdir(exist_ok=True)
    (desk.path / "memories/MEMORY.md").write_text("the desk's memory\n")
    pushed = json.loads(ok(desk.roam("push", "--json")).stdout)
    assert "cron/jobs.json" in pushed["added"]
    ok(laptop.roam("init"))

    # --cron applies only the cron part, and names the command that approves each job.
    only_cron = ok(laptop.roam("pull", "--cron", "--apply"))
    assert f"hermes cron resume {desk_job}" in only_cron.stdout
    assert "landed PAUSED" in only_cron.stdout
    assert not (laptop.path / "memories/MEMORY.md").exists()
    landed = jobs(laptop)
    assert landed[desk_job]["enabled"] is False and landed[desk_job]["state"] == "paused"
    assert landed[desk_job]["prompt"] == "say hello" and landed[desk_job]["paused_at"]
    assert landed[laptop_job]["enabled"] is True            # local-only: untouched
    listing = ok(laptop.hermes("cron", "list", "--all")).stdout
    assert "hello-job" in listing and "paused" in listing.lower()

    # Approved here; the full pull keeps that state, and it does not travel back.
    ok(laptop.hermes("cron", "resume", desk_job))
    full = laptop.roam("pull", "--apply", "--overwrite-conflicts")
    ok(full)
    assert "cron job lands paused" not in full.stdout
    assert jobs(laptop)[desk_job]["enabled"] is True
    assert (laptop.path / "memories/MEMORY.md").read_text() == "the desk's memory\n"
    ok(laptop.roam("push"))
    back = ok(desk.roam("pull", "--apply"))
    assert f"hermes cron resume {laptop_job}" in back.stdout
    assert f"hermes cron resume {desk_job}" not in back.stdout
    on_desk = jobs(desk)
    assert on_desk[desk_job]["enabled"] is True and on_desk[desk_job]["state"] == "scheduled"
    assert on_desk[laptop_job]["enabled"] is False


def test_a_cron_lock_held_elsewhere_fails_the_pull_with_nothing_written(
        pair: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    desk, laptop = pair(sync_cron=True)
    ok(desk.roam("init", "--create-remote"))
    ok(desk.roam("push"))
    ok(laptop.roam("init"))
    ok(laptop.hermes("cron", "create", "every 1h", "laptop only", "--name", "laptop-job"))
    lock = laptop.path / "cron/.jobs.lock"
    assert lock.exists()
    with flock_held(lock):
        before = tree_bytes(laptop.path)
        monkeypatch.setattr(cron_lock, "WAIT_SECONDS", 1.0)
        code, out, err = roam_inprocess(laptop, "pull", "--apply", "--overwrite-conflicts")
        assert code == 1, (out, err)
        assert "cron lock" in err and "held by another process" in err
        assert "nothing was written" in err
        assert tree_bytes(laptop.path) == before
    code, out, err = roam_inprocess(laptop, "pull", "--apply", "--overwrite-conflicts")
    assert code == 0, (out, err)
    (job,) = [job for job in jobs(laptop).values() if job["name"] == "hello-job"]
    assert job["enabled"] is False and f"hermes cron resume {job['id']}" in out
