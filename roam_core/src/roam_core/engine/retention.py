"""Which generations a retention policy keeps: restic's `forget` semantics, on generations.

Generations are taken newest first. `keep_last` keeps the N newest. Each period policy
(`hourly`, `daily`, `weekly`, `monthly`, `yearly`) keeps the newest generation of each of the
N most recent periods that hold one (a period without generations does not count), exactly as
restic's bucket policies do; N of -1 means every period. `keep_within` keeps every generation
newer than the newest generation's time minus the duration (relative to the newest, not to
now, so an idle fleet never loses everything). `keep_generations` keeps those numbers.
A generation kept by any rule is kept. Periods are UTC, so every device of a fleet, whatever
its time zone, computes the same plan (docs/decisions.md).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from roam_core.errors import UserError

#: The period rules, in restic's order, with how a time falls into its period.
PERIODS: dict[str, Callable[[datetime.datetime], str]] = {
    "hourly": lambda when: when.strftime("%Y-%m-%d %H"),
    "daily": lambda when: when.strftime("%Y-%m-%d"),
    "weekly": lambda when: "{:04d}-W{:02d}".format(*when.isocalendar()[:2]),
    "monthly": lambda when: when.strftime("%Y-%m"),
    "yearly": lambda when: when.strftime("%Y"),
}

_DURATION = re.compile(r"(\d+)([ymdh])")


@dataclass(frozen=True)
class Duration:
    """A restic duration such as `30d`, `1y6m` or `2d12h` (y years, m months, d days, h hours)."""

    years: int = 0
    months: int = 0
    days: int = 0
    hours: int = 0

    @classmethod
    def parse(cls, text: str) -> Duration:
        cleaned = text.strip().lower()
        parts = _DURATION.findall(cleaned)
        if not cleaned or "".join(f"{n}{u}" for n, u in parts) != cleaned:
            raise UserError(f"invalid duration {text!r}: use numbers with y, m, d or h, "
                            "like 30d, 1y6m or 2d12h")
        amounts = {"y": 0, "m": 0, "d": 0, "h": 0}
        for number, unit in parts:
            amounts[unit] += int(number)
        return cls(amounts["y"], amounts["m"], amounts["d"], amounts["h"])

    def before(self, when: datetime.datetime) -> datetime.datetime:
        """`when` minus this duration; months and years as calendar steps, like Go's AddDate.

        A day that does not exist in the target month rolls over (31 March minus a month
        is 3 March in a common year), as restic's arithmetic does.
        """
        month_index = when.year * 12 + (when.month - 1) - self.years * 12 - self.months
        year, month = divmod(month_index, 12)
        first = when.replace(year=year, month=month + 1, day=1)
        return first + datetime.timedelta(days=when.day - 1 - self.days, hours=-self.hours)

    def __str__(self) -> str:
        text = "".join(f"{value}{unit}" for value, unit in ((self.years, "y"),
                       (self.months, "m"), (self.days, "d"), (self.hours, "h")) if value)
        return text or "0h"


@dataclass(frozen=True)
class Policy:
    """What to keep; an empty policy keeps everything (and `forget` refuses it)."""

    last: int = 0
    hourly: int = 0
    daily: int = 0
    weekly: int = 0
    monthly: int = 0
    yearly: int = 0
    within: Duration | None = None
    generations: tuple[int, ...] = ()

    def empty(self) -> bool:
        return not (self.last or self.within or self.generations
                    or any(getattr(self, period) for period in PERIODS))

    def describe(self) -> str:
        """The policy as the flags that make it, e.g. `keep-last 5, keep-daily 14`."""
        parts = [f"keep-last {self.last}"] if self.last else []
        parts += [f"keep-{period} {getattr(self, period)}" for period in PERIODS
                  if getattr(self, period)]
        if self.within is not None:
            parts.append(f"keep-within {self.within}")
        parts += [f"keep-generation {number}" for number in self.generations]
        return ", ".join(parts) or "keep everything"

    @classmethod
    def from_setting(cls, value: Any) -> Policy:
        """The `retention` setting: a mapping such as {keep_daily: 14, keep_monthly: 12}."""
        if value is None or value == {}:
            return cls()
        if not isinstance(value, dict):
            raise UserError("setting retention must be a mapping like "
                            "{keep_daily: 14, keep_monthly: 12}")
        counts: dict[str, Any] = {}
        within = None
        for key, raw in value.items():
            name = str(key).removeprefix("keep_")
            if name == "within":
                within = Duration.parse(str(raw))
            elif name in ("last", *PERIODS):
                if isinstance(raw, bool) or not isinstance(raw, int) or raw < -1 \
                        or (name == "last" and raw < 0):
                    raise UserError(f"setting retention: {key} must be a whole number")
                counts[name] = raw
            else:
                raise UserError(f"setting retention: unknown rule {key!r} (keep_last, "
                                "keep_within, keep_hourly, keep_daily, keep_weekly, "
                                "keep_monthly, keep_yearly)")
        return cls(within=within, **counts)


@dataclass(frozen=True)
class Candidate:
    """One generation the policy judges: its number and when it was pushed (UTC)."""

    number: int
    time: datetime.datetime


@dataclass
class Decision:
    """Generations kept (each with why) and forgotten, newest first."""

    keep: dict[int, list[str]] = field(default_factory=dict)
    forget: list[int] = field(default_factory=list)


def parse_time(text: str) -> datetime.datetime:
    """A snapshot's `created` as an aware UTC time (a naive one is taken as UTC)."""
    when = datetime.datetime.fromisoformat(text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.astimezone(datetime.UTC)


def apply(policy: Policy, candidates: Sequence[Candidate]) -> Decision:
    """Judge every candidate against `policy`; the newest first, as restic walks them."""
    ordered = sorted(candidates, key=lambda item: (item.time, item.number), reverse=True)
    decision = Decision()
    if not ordered:
        return decision
    cutoff = policy.within.before(ordered[0].time) if policy.within is not None else None
    left = {period: getattr(policy, period) for period in PERIODS}
    last_seen: dict[str, str | None] = dict.fromkeys(PERIODS)
    kept_last = 0
    for item in ordered:
        reasons: list[str] = []
        if kept_last < policy.last:
            kept_last += 1
            reasons.append("last")
        if cutoff is not None and item.time > cutoff:
            reasons.append(f"within {policy.within}")
        if item.number in policy.generations:
            reasons.append("named")
        for period, bucket_of in PERIODS.items():
            bucket = bucket_of(item.time)
            if left[period] != 0 and bucket != last_seen[period]:
                last_seen[period] = bucket
                if left[period] > 0:
                    left[period] -= 1
                reasons.append(period)
        if reasons:
            decision.keep[item.number] = reasons
        else:
            decision.forget.append(item.number)
    return decision
