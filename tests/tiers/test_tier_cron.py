"""Cron job definitions without Hermes: what travels, and how a pull merges it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from roam_core.errors import UserError
from roam_core.tiers import cron


def job(job_id: str = "781cfb9303a5", **changes: Any) -> dict[str, Any]:
    """A job record exactly as Hermes 0.19's `create_job` writes it."""
    record = {
        "id": job_id, "name": "hello-job", "prompt": "say hello", "skills": [], "skill": None,
        "model": None, "provider": None, "provider_snapshot": "custom",
        "model_snapshot": "stub-model", "base_url": None, "script": None, "no_agent": False,
        "context_from": None,
        "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
        "schedule_display": "every 120m", "repeat": {"times": None, "completed": 0},
        "enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None,
        "created_at": "2026-11-30T08:14:23.367609+00:00",
        "next_run_at": "2026-11-30T10:14:23.559659+00:00", "last_run_at": None,
        "last_status": None, "last_error": None, "last_delivery_error": None,
        "deliver": "local", "origin": None, "enabled_toolsets": None, "workdir": None,
    }
    record.update(changes)
    return record


def doc(*jobs: dict[str, Any]) -> bytes:
    return json.dumps({"jobs": list(jobs), "updated_at": "2026-11-30T08:14:23+00:00"},
                      indent=2).encode()


def as_jobs(data: bytes | None) -> dict[str, dict[str, Any]]:
    assert data is not None
    return {j["id"]: j for j in json.loads(data)["jobs"]}


RUN_STATE = ("enabled", "state", "paused_at", "paused_reason", "next_run_at", "last_run_at",
             "last_status", "last_error", "last_delivery_error", "provider_snapshot",
             "model_snapshot", "updated_at", "completed")


def test_the_projection_carries_definitions_only() -> None:
    text = cron.projection(doc(job("b2", name="second"), job("a1")))
    data = json.loads(text)
    assert [j["id"] for j in data["jobs"]] == ["a1", "b2"]          # sorted by id
    for key in RUN_STATE:
        assert f'"{key}"' not in text.decode(), key
    assert "repeat" not in data["jobs"][0]          # times null is Hermes's default: forever
    assert data["jobs"][0]["prompt"] == "say hello"
    assert data["jobs"][0]["schedule"]["minutes"] == 120


def test_a_job_firing_or_pausing_is_not_a_change() -> None:
    before = cron.projection(doc(job()))
    fired = job(last_run_at="2026-11-30T10:14:30+00:00", last_status="ok",
                next_run_at="2026-11-30T12:14:23+00:00", repeat={"times": None, "completed": 1})
    paused = job(enabled=False, state="paused", paused_at="2026-11-30T11:00:00+00:00")
    assert cron.projection(doc(fired)) == before
    assert cron.projection(doc(paused)) == before
    assert cron.projection(doc(job(prompt="say goodbye"))) != before


def test_the_newer_split_format_projects_the_same() -> None:
    split = {key: value for key, value in job().items()
             if key in cron.DEFINITION_FIELDS or key in ("enabled", "repeat")}
    split["repeat"] = {"times": None}
    assert cron.projection(doc(split)) == cron.projection(doc(job()))


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf" + doc(job()),
                                  json.dumps([job()]).encode()])
def test_hermes_tolerated_forms_are_read(data: bytes) -> None:
    assert json.loads(cron.projection(data))["jobs"][0]["id"] == job()["id"]


@pytest.mark.parametrize("data", [b"{not json", b'"a string"', b'{"jobs": [1, 2]}',
                                  b"\xff\xfe"])
def test_a_damaged_jobs_file_is_one_clear_error(data: bytes) -> None:
    with pytest.raises(UserError) as caught:
        cron.projection(data)
    assert "cron/jobs.json" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_new_job_lands_paused_in_the_019_representation() -> None:
    remote = cron.projection(doc(job()))
    merged = cron.merge_jobs(None, remote, split=False, source="desk", when="T")
    landed = as_jobs(merged.data)["781cfb9303a5"]
    assert landed["enabled"] is False and landed["state"] == "paused"
    assert landed["paused_at"] == "T" and "hermes cron resume 781cfb9303a5" in \
        landed["paused_reason"]
    assert "repeat" not in landed                   # forever: Hermes's default, never added
    assert landed["next_run_at"] is None and landed["last_run_at"] is None
    assert landed["prompt"] == "say hello" and "provider_snapshot" not in landed
    assert merged.landed == [cron.Landed("781cfb9303a5", "hello-job", "new")]


def test_a_new_job_in_the_split_format_carries_no_legacy_run_fields() -> None:
    merged = cron.merge_jobs(doc(), cron.projection(doc(job())), split=True, source="desk")
    landed = as_jobs(merged.data)["781cfb9303a5"]
    assert landed["enabled"] is False and landed["state"] == "paused"
    assert "next_run_at" not in landed and "last_status" not in landed


def test_the_same_definition_keeps_the_local_state() -> None:
    local = doc(job(enabled=False, state="paused", paused_at="X"), job("c3", name="mine"))
    merged = cron.merge_jobs(local, cron.projection(doc(job())), split=False, source="desk")
    assert merged.data is None and merged.landed == []
    running = doc(job(last_run_at="L", repeat={"times": None, "completed": 4}))
    assert cron.merge_jobs(running, cron.projection(doc(job())), split=False,
                           source="desk").data is None


def test_a_changed_job_keeps_its_run_history_and_pauses() -> None:
    local = doc(job(last_run_at="L", last_status="ok", repeat={"times": 5, "completed": 3},
                    provider_snapshot="local-provider"), job("c3", name="mine"))
    remote = cron.projection(doc(job(prompt="say goodbye", repeat={"times": 9})))
    synced = cron.projection(doc(job(repeat={"times": 5})))  # the definition both last had
    merged = cron.merge_jobs(local, remote, split=False, source="desk", base=synced)
    jobs = as_jobs(merged.data)
    changed = jobs["781cfb9303a5"]
    assert changed["prompt"] == "say goodbye" and changed["enabled"] is False
    assert changed["last_run_at"] == "L" and changed["repeat"] == {"times": 9, "completed": 3}
    assert changed["provider_snapshot"] == "local-provider"
    assert jobs["c3"]["enabled"] is True and jobs["c3"]["name"] == "mine"  # local-only stays
    assert list(jobs) == ["781cfb9303a5", "c3"]                           # order kept
    assert merged.landed[0].change == "changed"


def test_a_remote_without_a_local_job_never_deletes_it() -> None:
    local = doc(job("c3", name="mine"))
    merged = cron.merge_jobs(local, cron.projection(doc()), split=False, source="desk")
    assert merged.data is None


def test_a_synced_job_deleted_elsewhere_is_deleted_here() -> None:
    base = cron.projection(doc(job("a1"), job("b2", name="second")))
    local = doc(job("a1", last_status="ok"), job("b2", name="second"), job("c3", name="mine"))
    merged = cron.merge_jobs(local, cron.projection(doc(job("b2", name="second"))),
                             split=False, source="desk", base=base)
    assert [(gone.job_id, gone.change) for gone in merged.removed] == [("a1", "removed")]
    assert list(as_jobs(merged.data)) == ["b2", "c3"]   # c3 was never synced: it stays
    assert merged.landed == []


def test_a_deleted_job_changed_here_since_stays() -> None:
    base = cron.projection(doc(job("a1")))
    local = doc(job("a1", prompt="changed here"))
    merged = cron.merge_jobs(local, cron.projection(doc()), split=False, source="desk",
                             base=base)
    assert merged.removed == [] and merged.data is None


@pytest.mark.parametrize("bad", ["../../etc", "", "a/b", "x" * 65, None, 7])
def test_a_job_id_that_could_name_a_path_is_refused(bad: Any) -> None:
    remote = json.dumps({"jobs": [{**cron.definition(job()), "id": bad}]}).encode()
    merged = cron.merge_jobs(None, remote, split=False, source="desk")
    assert merged.data is None and merged.landed == [] and len(merged.refused) == 1


def test_paths_profiles_and_resume_commands() -> None:
    assert cron.is_jobs_file("cron/jobs.json")
    assert cron.is_jobs_file("profiles/work/cron/jobs.json")
    assert cron.is_jobs_file("profiles/Odd Name/cron/jobs.json")   # never travels raw
    for rel in ("cron/jobs.json.bak", "profiles/../cron/jobs.json", "x/cron/jobs.json",
                "profiles/./cron/jobs.json", "cron/output/jobs.json",
                "profiles/a/b/cron/jobs.json"):
        assert not cron.is_jobs_file(rel), rel
    assert cron.profile_of("profiles/work/cron/jobs.json") == "work"
    assert cron.resume_command("default", "abc") == "hermes cron resume abc"
    assert cron.resume_command("work", "abc") == "hermes -p work cron resume abc"


def test_a_received_job_projects_back_byte_for_byte() -> None:
    """Missing fields mean Hermes's defaults: a receiver never adds them (issue 25, item 3)."""
    sparse = {"id": "0a0a0a0a0a0a", "name": "sparse", "prompt": "p",
              "schedule": {"kind": "interval", "minutes": 5, "display": "every 5m"}}
    origin = json.dumps({"jobs": [sparse]}).encode()
    sent = cron.projection(origin)
    landed = cron.merge_jobs(None, sent, split=False, source="desk")
    assert cron.projection(landed.data or b"") == sent
    # a Hermes 0.19 record spelling every default out is the same definition
    spelled = job("0a0a0a0a0a0a", name="sparse", prompt="p",
                  schedule=sparse["schedule"], schedule_display=None, deliver=None,
                  created_at=None)
    assert cron.definition(spelled) == cron.definition(sparse)
    # a real value is never dropped
    assert cron.definition(job(repeat={"times": 3, "completed": 1}))["repeat"] == {"times": 3}
