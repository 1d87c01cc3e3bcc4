"""Text for people that both faces show: the CLI prints these lines, `/roam` condenses them.

Kept below both faces so `roam diff` and `/roam diff` (and `doctor`) say the same thing
without Hermes importing the CLI. The `--json` documents are the records' `as_json()`;
`published` gives the form the CLI prints them in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from roam_core.service.text import sanitize

if TYPE_CHECKING:
    from roam_core.engine.plan import Plan
    from roam_core.storage import DoctorCheck

#: Added/changed lines shown before "… N more" (the rest are in `--all` and `--json`).
CAP = 40
#: Only these plan lines are capped: everything else asks for a decision or says what is lost.
CAPPED = ("added: ", "changed: ", "local change ")
#: A passing doctor row's detail starts with this when it carries a caveat (shown `warn`).
WARN = "warning: "

@runtime_checkable
class HasLines(Protocol):
    """A record with a text form for people besides its `--json` document."""

    def lines(self) -> list[str]:
        """The lines the CLI prints for this record."""


#: A JSON value as `json` reads it back.
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def published(document: object) -> Json:
    """`document` as `--json` prints it: keys sorted, anything else turned to a string."""
    loaded: Json = json.loads(json.dumps(document, sort_keys=True, default=str))
    return loaded


def plan_lines(lines: Iterable[str], *, show_all: bool = False, indent: str = "  ") -> list[str]:
    """A plan for people: added/changed lines capped at `CAP` unless `show_all`.

    Conflicts, config and memory conflicts, kept-local paths, removals, refusals and cron
    lines are never cut: a long pull must not hide what needs a decision.
    """
    shown: list[str] = []
    kept = hidden = 0
    for line in lines:
        if line.startswith(CAPPED) and not show_all:
            if kept >= CAP:
                hidden += 1
                continue
            kept += 1
        shown.append(f"{indent}{sanitize(line)}")
    if hidden:
        shown.append(f"{indent}… {hidden} more added/changed (--all or --json shows every "
                     "line)")
    return shown


def diff_lines(plan: Plan, *, show_all: bool = False) -> list[str]:
    """`roam diff`: the pull preview grouped by scope class (shared, local, ignored)."""
    from roam_core.engine.plan import iter_lines

    groups: dict[str, list[str]] = {"shared": [], "local": [], "ignored": []}
    for line in iter_lines(plan):
        if line.startswith("kept local by rules: "):
            scope = "ignored" if "(ignored" in line else "local"
            groups[scope].append(line.removeprefix("kept local by rules: "))
        else:
            groups["shared"].append(line)
    shown: list[str] = []
    for scope, lines in groups.items():
        shown.append(f"{scope}: {len(lines)}")
        shown += plan_lines(lines, show_all=show_all)
    shown.append(f"unchanged: {plan.unchanged} file(s)")
    return shown


def doctor_lines(rows: Iterable[DoctorCheck]) -> list[str]:
    """`roam doctor`: one `ok`, `warn` or `FAIL` line per check."""
    shown: list[str] = []
    for name, ok, detail in rows:
        mark = "warn" if detail.startswith(WARN) else "ok  " if ok else "FAIL"
        shown.append(f"{mark}  {sanitize(name)}: {sanitize(detail.removeprefix(WARN))}")
    return shown
