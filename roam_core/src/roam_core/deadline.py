"""One time budget per operation, shared by every backend call it makes."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass

from roam_core.errors import DeadlineExceeded

#: Budgets in seconds, from the design: long transfers vs. quick looks at the remote.
#: A transfer's is its base: with `operation_timeout_seconds` unset it grows with the work.
BUDGETS = {"push": 3600.0, "pull": 3600.0, "restore": 3600.0, "status": 60.0, "doctor": 60.0,
           "diff": 60.0, "check": 3600.0, "init": 120.0, "prune": 3600.0, "key rotate": 3600.0,
           "default": 60.0}

#: Transfers whose budget is the `operation_timeout_seconds` setting when it is given.
LONG_OPERATIONS = frozenset({"push", "pull", "restore", "check", "prune", "key rotate"})

#: An unreachable remote should fail within about this many seconds.
CONNECT_BUDGET = 15.0

#: The slowest link a default deadline allows for (a poor uplink, a throttled bucket) ...
FLOOR_RATE = 256 * 1024
#: ... and the time one stored object may take on its own (requests, round trips).
PER_OBJECT_SECONDS = 0.5


@dataclass
class Deadline:
    """A point on the monotonic clock by which an operation must finish.

    Mutable only through `size_to`: every holder (the backend's plugin context, the
    current-deadline variable) sees a budget grown once the work is known.
    """

    at: float
    operation: str = "operation"
    budget: float = 0.0
    #: the budget is the default for `operation`, not a setting: `size_to` may grow it
    sized: bool = False

    @classmethod
    def after(cls, seconds: float, operation: str = "operation") -> Deadline:
        return cls(time.monotonic() + seconds, operation, seconds)

    @classmethod
    def for_operation(cls, operation: str, long_budget: float | None = None) -> Deadline:
        """The budget of `operation`; transfers take `long_budget` (the setting) when given.

        A transfer without the setting starts from its base and is sized to the work by
        `size_to` once the plan knows how much moves.
        """
        seconds = BUDGETS.get(operation, BUDGETS["default"])
        long = operation in LONG_OPERATIONS
        if long_budget is not None and long:
            seconds = long_budget
        return cls(time.monotonic() + seconds, operation, seconds,
                   sized=long and long_budget is None)

    def size_to(self, transfer_bytes: int, objects: int) -> None:
        """Grow a default budget to what moving `transfer_bytes` in `objects` may take.

        The budget becomes max(base, bytes / FLOOR_RATE + objects × PER_OBJECT_SECONDS),
        counted from the start of the operation; an explicit setting is never changed.
        """
        if not self.sized:
            return
        needed = transfer_bytes / FLOOR_RATE + objects * PER_OBJECT_SECONDS
        if needed > self.budget:
            self.at += needed - self.budget
            self.budget = needed

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def check(self) -> None:
        """Raise `DeadlineExceeded` when the budget is spent."""
        if self.expired():
            raise DeadlineExceeded(self._message())

    def _message(self) -> str:
        if self.operation not in LONG_OPERATIONS:
            return f"{self.operation} ran out of time"
        # Packs already uploaded and blobs already fetched are kept: a rerun skips them.
        given = "sized to the work; set operation_timeout_seconds to give it more" \
            if self.sized else "operation_timeout_seconds"
        return (f"{self.operation} ran out of time after {self.budget:.0f} s ({given}); "
                f"run roam {self.operation} again to resume where it stopped")

    def timeout(self, cap: float) -> float:
        """The timeout for one call: at most `cap`, never past the deadline, at least 0.1 s."""
        self.check()
        return max(0.1, min(cap, self.remaining()))


_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "roam_deadline", default=None
)


def current() -> Deadline | None:
    """The deadline of the operation running in this context, if any."""
    return _current.get()


@contextlib.contextmanager
def running(deadline: Deadline) -> Iterator[Deadline]:
    """Make `deadline` current for the calls made inside the block."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)
