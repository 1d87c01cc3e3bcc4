"""Cron definitions through the engine without Hermes: crash recovery under the lock, restore.

Job records are written the way Hermes 0.19 writes them (test_tier_cron.job); the real
Hermes round trip is in test_tiers_hermes.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_fleet import new_key, plain_home, roam_inprocess
from test_tier_cron import doc, job

from roam_core.tiers import cron_lock
from support.locks import flock_held


@pytest.fixture
def homes(tmp_path: Path) -> Any:
    key, store = new_key(), tmp_path / "store"

    def make(name: str, **settings: Any) -> Path:
        return plain_home(tmp_path / name / ".hermes", name, store, key, sync_cron=True,
                          **settings)

    return make


def write_jobs(home: Path, *jobs: dict[str, Any]) -> bytes:
    path = home / "cron/jobs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = doc(*jobs)
    path.write_bytes(data)
    return data


def roam(home: Path, *args: str) -> Any:
    code, out, err = roam_inprocess(home, *args)
    assert code == 0, (code, out, err)
    return json.loads(out) if "--json" in args else out


@pytest.fixture
def hold() -> Iterator[Any]:
    """`hold(lock)`: the lock flocked by another process until the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda lock: stack.enter_context(flock_held(lock))


def _crashed_cron_install(homes: Any) -> tuple[Path, bytes, subprocess.CompletedProcess[str]]:
    """The laptop's pull of the desk's cron job, SIGKILLed once installed, before commit."""
    desk, laptop = homes("desk"), homes("laptop")
    write_jobs(desk, job("aaaaaaaaaaaa", name="desk-job"))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    original = write_jobs(laptop, job("bbbbbbbbbbbb", name="laptop-job"))
    roam(laptop, "init")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_TEST_KILL_AT"] = "journal:installed"
    crashed = subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home",
                              str(laptop), "pull", "--apply"], env=env, capture_output=True,
                             text=True, timeout=120)
    return laptop, original, crashed


def test_a_crashed_cron_install_is_rolled_back_only_under_the_lock(
        homes: Any, hold: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    laptop, original, crashed = _crashed_cron_install(homes)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    installed = (laptop / "cron/jobs.json").read_bytes()
    assert installed != original and (laptop / "roam/journal.json").exists()
    # Hermes holds its cron lock: the recovery waits, then refuses, touching nothing.
    hold(laptop / "cron/.jobs.lock")
    monkeypatch.setattr(cron_lock, "WAIT_SECONDS", 0.5)
    code, out, err = roam_inprocess(laptop, "status")
    assert code == 1 and "cron lock" in err, (out, err)
    assert (laptop / "cron/jobs.json").read_bytes() == installed
    assert (laptop / "roam/journal.json").exists()


def test_a_crashed_cron_install_rolls_back_when_the_lock_is_free(homes: Any) -> None:
    laptop, original, crashed = _crashed_cron_install(homes)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    code, out, err = roam_inprocess(laptop, "status")
    assert code == 0 and "recovered: rolled back" in err, (out, err)
    assert (laptop / "cron/jobs.json").read_bytes() == original


def test_restoring_old_definitions_lands_them_paused(homes: Any) -> None:
    desk = homes("desk")
    write_jobs(desk, job("aaaaaaaaaaaa", prompt="version one"))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    write_jobs(desk, job("aaaaaaaaaaaa", prompt="version two", last_run_at="L"))
    roam(desk, "push")
    out = roam(desk, "restore", "cron/jobs.json", "--generation", "1", "--apply")
    assert "hermes cron resume aaaaaaaaaaaa" in out
    (restored,) = json.loads((desk / "cron/jobs.json").read_text())["jobs"]
    assert restored["prompt"] == "version one" and restored["enabled"] is False
    assert restored["last_run_at"] == "L"


def test_a_pull_with_sync_cron_off_keeps_the_file_local(homes: Any, tmp_path: Path) -> None:
    desk = homes("desk")
    write_jobs(desk, job("aaaaaaaaaaaa"))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    key = (desk / ".env").read_text().split("=", 1)[1].strip()
    off = plain_home(tmp_path / "off" / ".hermes", "off", tmp_path / "store", key)
    roam(off, "init")
    code, out, err = roam_inprocess(off, "pull", "--apply", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["cron_paused"] == [] and not (off / "cron/jobs.json").exists()
    assert any(item["path"] == "cron/jobs.json" for item in plan["kept_local_by_rules"])


def test_a_profile_jobs_file_names_its_profile_in_the_resume_command(homes: Any) -> None:
    desk, laptop = homes("desk"), homes("laptop")
    write_jobs(desk / "profiles/work", job("cccccccccccc", name="work-job"))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    roam(laptop, "init")
    out = roam(laptop, "pull", "--cron", "--apply")
    assert "hermes -p work cron resume cccccccccccc" in out and "this device stays at" in out
    (landed,) = json.loads((laptop / "profiles/work/cron/jobs.json").read_text())["jobs"]
    assert landed["state"] == "paused"


def test_hooks_travel_only_with_an_explicit_rule_and_say_what_it_means(homes: Any) -> None:
    desk, laptop = homes("desk"), homes("laptop")
    (desk / "hooks").mkdir()
    (desk / "hooks/on_start.py").write_text("print('desk hook')\n")
    roam(desk, "init", "--create-remote")
    assert "hooks/on_start.py" not in roam(desk, "push", "--json")["added"]
    (desk / "roam/rules.yaml").write_text("shared: [hooks/]\n")
    assert "this device runs hook code written on your other machines" in roam(desk, "status")
    assert "runs hook code written on your other machines" in roam(desk, "rules")
    assert "hooks/on_start.py" in roam(desk, "push", "--json")["added"]
    phone = homes("phone")
    roam(phone, "init")
    plan = roam(phone, "pull", "--apply", "--json")
    assert not (phone / "hooks/on_start.py").exists()      # no rule here: never installed
    assert [item["path"] for item in plan["kept_local_by_rules"]] == ["hooks/on_start.py"]
    (laptop / "roam").mkdir(mode=0o700)
    (laptop / "roam/rules.yaml").write_text("shared: [hooks/]\n")
    roam(laptop, "init")
    roam(laptop, "pull", "--apply")
    assert (laptop / "hooks/on_start.py").read_text() == "print('desk hook')\n"


def test_a_job_deleted_on_one_device_is_deleted_on_the_others(homes: Any) -> None:
    desk, laptop = homes("desk"), homes("laptop")
    write_jobs(desk, job("aaaaaaaaaaaa", name="to-go"), job("bbbbbbbbbbbb", name="stays"))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    roam(laptop, "init")
    roam(laptop, "pull", "--apply", "--overwrite-conflicts")
    write_jobs(desk, job("bbbbbbbbbbbb", name="stays"))
    roam(desk, "push")

    plan = roam(laptop, "pull", "--apply", "--json")
    assert [(row["id"], row["name"]) for row in plan["cron_removed"]] == [
        ("aaaaaaaaaaaa", "to-go")]
    jobs = json.loads((laptop / "cron/jobs.json").read_text())["jobs"]
    assert [entry["id"] for entry in jobs] == ["bbbbbbbbbbbb"]
    # the deletion does not come back through the laptop's next push
    (laptop / "SOUL.md").write_text("laptop soul\n")
    roam(laptop, "push")
    roam(desk, "pull", "--apply")
    jobs = json.loads((desk / "cron/jobs.json").read_text())["jobs"]
    assert [entry["id"] for entry in jobs] == ["bbbbbbbbbbbb"]


def test_a_job_through_three_devices_and_back_is_no_change_at_its_origin(homes: Any) -> None:
    """A job without `repeat` once came back from the receivers as changed, landing paused."""
    desk, laptop, tower = homes("desk"), homes("laptop"), homes("tower")
    sparse = {"id": "0a0a0a0a0a0a", "name": "sparse", "prompt": "say hi",
              "schedule": {"kind": "interval", "minutes": 5, "display": "every 5m"},
              "enabled": True, "state": "scheduled"}
    write_jobs(desk, sparse)
    (desk / "cron/jobs.json").chmod(0o600)  # as Hermes keeps it (and as a pull lands it)
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    for home in (laptop, tower):
        roam(home, "init")
        roam(home, "pull", "--apply")
        (home / "SOUL.md").write_text(f"{home.parent.name}\n")
        pushed = roam(home, "push", "--json")
        assert "cron/jobs.json" not in pushed["changed"] + pushed["added"]
    plan = roam(desk, "pull", "--apply", "--json")
    assert plan["cron_paused"] == []
    assert json.loads((desk / "cron/jobs.json").read_text())["jobs"][0]["enabled"] is True
