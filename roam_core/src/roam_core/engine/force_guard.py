"""The `push --force` guard: a forced push that removes much of the remote must be confirmed.

`--force` publishes this device's view over a remote that moved ahead; every shared path the
remote has and this home lacks is removed in the new generation. When that is more than
`force_guard_percent` of the remote's paths or more than `force_guard_paths` paths, or the
device has never pulled (its view may not be the fleet's at all), the push asks first: the
CLI on a terminal, `--yes` in scripts; anything else refuses, and nothing is published.
"""

from __future__ import annotations

from collections.abc import Callable

from roam_core.engine.state import LocalState
from roam_core.errors import UserError
from roam_core.settings import number

#: Asked with the paths a forced push would remove and why; True publishes them.
Confirm = Callable[[list[str], str], bool]


def reason(state: LocalState, removed: list[str], total: int,
           settings: dict[str, object]) -> str | None:
    """Why this forced push needs confirming, or None when it does not."""
    if not removed:
        return None
    share = f"would remove {len(removed)} of {total} remote path(s)"
    if state.last_pull is None:
        return f"comes from a device that never pulled and {share}"
    percent = number(settings, "force_guard_percent")
    paths = number(settings, "force_guard_paths")
    if len(removed) > paths or len(removed) * 100 > percent * total:
        return f"{share} (over force_guard_percent {percent:g}% or force_guard_paths {paths:g})"
    return None


def check(state: LocalState, removed: list[str], total: int, settings: dict[str, object],
          confirm: Confirm | None) -> None:
    """Refuse (exit 1) a forced push that needs confirming and did not get it."""
    why = reason(state, removed, total, settings)
    if why is None or (confirm is not None and confirm(removed, why)):
        return
    raise UserError(f"push --force {why}; refused without confirmation (confirm on a terminal, "
                    "or roam push --force --yes in scripts)")
