"""Issue 23: retention policies follow restic's documented `forget` semantics.

restic: "--keep-daily n: for the last n days which have one or more snapshots, only keep the
last one for that day"; periods without a snapshot do not count; --keep-last counts
snapshots; --keep-within keeps everything within the duration of the *latest* snapshot;
a snapshot kept by any rule is kept; -1 means unlimited.
"""

from __future__ import annotations

import datetime

import pytest

from roam_core.engine.retention import Candidate, Duration, Policy, apply
from roam_core.errors import UserError

UTC = datetime.UTC


def _at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


def _gens(*times: str) -> list[Candidate]:
    """Generations 1..N at these times (oldest first)."""
    return [Candidate(number, _at(when)) for number, when in enumerate(times, 1)]


def _kept(policy: Policy, candidates: list[Candidate]) -> list[int]:
    decision = apply(policy, candidates)
    assert sorted([*decision.keep, *decision.forget]) == sorted(c.number
                                                                       for c in candidates)
    return sorted(decision.keep)


def test_keep_last_counts_generations_newest_first() -> None:
    gens = _gens(*(f"2026-01-{day:02d}T12:00:00" for day in range(1, 11)))
    assert _kept(Policy(last=3), gens) == [8, 9, 10]
    assert _kept(Policy(last=20), gens) == list(range(1, 11))


def test_keep_daily_keeps_the_newest_of_each_day_that_has_one() -> None:
    gens = _gens("2026-01-01T08:00:00", "2026-01-01T20:00:00",  # 1, 2
                 "2026-01-03T09:00:00",                          # 3 (no generation on the 2nd)
                 "2026-01-05T07:00:00", "2026-01-05T08:00:00", "2026-01-05T23:59:00")  # 4-6
    # the last 2 days *that have generations* are the 5th and the 3rd: the 2nd does not count
    assert _kept(Policy(daily=2), gens) == [3, 6]
    assert _kept(Policy(daily=3), gens) == [2, 3, 6]
    assert _kept(Policy(daily=-1), gens) == [2, 3, 6]


def test_keep_hourly_weekly_monthly_yearly_buckets() -> None:
    gens = _gens("2026-01-05T10:05:00", "2026-01-05T10:50:00", "2026-01-05T11:10:00")
    assert _kept(Policy(hourly=5), gens) == [2, 3]
    # ISO weeks: 2026-01-04 is a Sunday (week 1), 2026-01-05 a Monday (week 2)
    weeks = _gens("2026-01-04T10:00:00", "2026-01-05T10:00:00", "2026-01-11T10:00:00",
                  "2026-01-12T10:00:00")
    assert _kept(Policy(weekly=2), weeks) == [3, 4]
    months = _gens("2025-11-30T00:00:00", "2025-12-01T00:00:00", "2025-12-31T23:00:00",
                   "2026-01-02T00:00:00")
    assert _kept(Policy(monthly=2), months) == [3, 4]
    assert _kept(Policy(yearly=1), months) == [4]
    assert _kept(Policy(yearly=5), months) == [3, 4]


def test_keep_within_is_relative_to_the_newest_generation_not_now() -> None:
    gens = _gens("2020-01-01T00:00:00", "2020-01-20T00:00:00", "2020-02-01T00:00:00",
                 "2020-03-01T00:00:00")
    # six years later nothing is "within 30d of now", yet the newest 30 days of the fleet stay
    assert _kept(Policy(within=Duration.parse("30d")), gens) == [3, 4]
    # exactly one month before the newest is outside: restic keeps times strictly after
    assert _kept(Policy(within=Duration.parse("1m")), gens) == [4]
    assert _kept(Policy(within=Duration.parse("2m")), gens) == [2, 3, 4]
    assert _kept(Policy(within=Duration.parse("1y")), gens) == [1, 2, 3, 4]


def test_durations_step_calendar_months_like_restic() -> None:
    newest = _at("2026-03-31T12:00:00")
    # restic's AddDate(0, -1, 0) from 31 March of a common year rolls over to 3 March
    assert Duration.parse("1m").before(newest) == _at("2026-03-03T12:00:00")
    assert Duration.parse("1y2m3d4h").before(newest) == _at("2025-01-28T08:00:00")
    assert str(Duration.parse("2d12h")) == "2d12h"
    for bad in ("", "30", "5w", "d30", "1d 2h"):
        with pytest.raises(UserError, match="invalid duration"):
            Duration.parse(bad)


def test_rules_combine_by_union_and_named_generations_stay() -> None:
    gens = _gens(*(f"2026-01-{day:02d}T12:00:00" for day in range(1, 11)))
    decision = apply(Policy(last=2, generations=(1,), daily=3), gens)
    assert sorted(decision.keep) == [1, 8, 9, 10]
    assert decision.keep[10] == ["last", "daily"]
    assert decision.keep[1] == ["named"]
    assert Policy().empty() and not Policy(last=1).empty()


def test_the_retention_setting() -> None:
    policy = Policy.from_setting({"keep_daily": 14, "keep_monthly": 12, "keep_within": "7d"})
    assert policy.describe() == "keep-daily 14, keep-monthly 12, keep-within 7d"
    assert Policy.from_setting(None).empty()
    for bad in ({"keep_fortnightly": 2}, {"keep_daily": "many"}, {"keep_last": -1}, [1]):
        with pytest.raises(UserError):
            Policy.from_setting(bad)
