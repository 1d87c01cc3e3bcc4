"""One time budget per operation, shared by every backend call it makes."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass

from roam_core.errors import DeadlineExceeded

#: Budgets in seconds, from the design: long transfers vs. quick looks at the remote.
BUDGETS = {"push": 900.0, "pull": 900.0, "restore": 900.0, "status": 60.0, "doctor": 60.0,
           "diff": 60.0, "check": 900.0, "init": 120.0, "default": 60.0}

#: Transfers whose budget is the `operation_timeout_seconds` setting when it is given.
LONG_OPERATIONS = frozenset({"push", "pull", "restore", "check"})

#: An unreachable remote should fail within about this many seconds.
CONNECT_BUDGET = 15.0


@dataclass(frozen=True)
class Deadline:
    """An absolute point on the monotonic clock by which an operation must finish."""

    at: float
    operation: str = "operation"

    @classmethod
    def after(cls, seconds: float, operation: str = "operation") -> Deadline:
        return cls(time.monotonic() + seconds, operation, seconds)

    budget: float = 0.0

    @classmethod
    def for_operation(cls, operation: str, long_budget: float | None = None) -> Deadline:
        """The budget of `operation`; transfers take `long_budget` (the setting) when given."""
        seconds = BUDGETS.get(operation, BUDGETS["default"])
        if long_budget is not None and operation in LONG_OPERATIONS:
            seconds = long_budget
        return cls(time.monotonic() + seconds, operation, seconds)

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
        return (f"{self.operation} ran out of time after {self.budget:.0f} s "
                f"(operation_timeout_seconds); run roam {self.operation} again to resume "
                "where it stopped, or raise the setting")

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
