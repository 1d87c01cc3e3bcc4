"""Issue 19 item 4: a cron job defined only here whose id another device also uses is a
conflict, listed and kept local; it used to be replaced and reported as "changed"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_fleet import roam_inprocess
from test_tier_cron import as_jobs, doc, job
from test_tier_cron_engine import homes, write_jobs

from roam_core.tiers import cron

__all__ = ["homes"]


def test_merge_keeps_a_colliding_local_only_job() -> None:
    local = doc(job("aaaaaaaaaaaa", prompt="mine"))
    remote = cron.projection(doc(job("aaaaaaaaaaaa", prompt="theirs")))
    merged = cron.merge_jobs(local, remote, split=False, source="desk", base=None)
    assert [c.job_id for c in merged.conflicts] == ["aaaaaaaaaaaa"]
    assert merged.landed == [] and merged.data is None
    taken = cron.merge_jobs(local, remote, split=False, source="desk", base=None,
                            overwrite=True)
    assert as_jobs(taken.data)["aaaaaaaaaaaa"]["prompt"] == "theirs"


def test_merge_three_way_against_the_synced_definitions() -> None:
    base = cron.projection(doc(job("aaaaaaaaaaaa", prompt="v1")))
    edited_here = doc(job("aaaaaaaaaaaa", prompt="mine"))
    # only this device changed it: a local change, not replaced by the older remote one
    same_remote = cron.merge_jobs(edited_here, base, split=False, source="desk", base=base)
    assert same_remote.data is None and not same_remote.conflicts
    # both changed it: a conflict
    remote = cron.projection(doc(job("aaaaaaaaaaaa", prompt="theirs")))
    both = cron.merge_jobs(edited_here, remote, split=False, source="desk", base=base)
    assert [c.job_id for c in both.conflicts] == ["aaaaaaaaaaaa"]
    # only the remote changed it: it lands (paused)
    unchanged_here = doc(job("aaaaaaaaaaaa", prompt="v1"))
    taken = cron.merge_jobs(unchanged_here, remote, split=False, source="desk", base=base)
    assert [landed.change for landed in taken.landed] == ["changed"]


def test_pull_keeps_the_colliding_job_exits_2_and_status_lists_it(homes: Any) -> None:
    desk: Path = homes("desk")
    laptop: Path = homes("laptop")
    write_jobs(desk, job("aaaaaaaaaaaa", prompt="desk's job"))
    assert roam_inprocess(desk, "init", "--create-remote")[0] == 0
    assert roam_inprocess(desk, "push")[0] == 0
    write_jobs(laptop, job("aaaaaaaaaaaa", prompt="laptop's own job"))
    assert roam_inprocess(laptop, "init")[0] == 0
    code, out, err = roam_inprocess(laptop, "pull", "--apply")
    assert code == 2, (out, err)
    assert "cron job conflict kept local" in out and "aaaaaaaaaaaa" in out
    jobs = as_jobs((laptop / "cron/jobs.json").read_bytes())
    assert jobs["aaaaaaaaaaaa"]["prompt"] == "laptop's own job"
    code, out, _err = roam_inprocess(laptop, "status", "--json")
    assert json.loads(out)["entry_conflicts"] == {"cron/jobs.json": ["job aaaaaaaaaaaa"]}
    # still open on the next pull; taking the remote one resolves it
    assert roam_inprocess(laptop, "pull", "--apply")[0] == 2
    assert "cron/jobs.json" in json.loads(roam_inprocess(laptop, "status", "--json")[1])[
        "entry_conflicts"]
    assert roam_inprocess(laptop, "pull", "--apply", "--overwrite-conflicts")[0] == 0
    jobs = as_jobs((laptop / "cron/jobs.json").read_bytes())
    assert jobs["aaaaaaaaaaaa"]["prompt"] == "desk's job"
