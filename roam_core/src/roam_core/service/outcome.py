"""One error policy for every face: a verb's record, or its one-line error and exit code."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from roam_core.errors import RoamError
from roam_core.service.text import first_line

log = logging.getLogger("roam.service")


class Record(Protocol):
    """What every verb returns: a versioned record that serialises to its `--json` keys."""

    @property
    def schema(self) -> int:
        """The record's version: raised when a `--json` key changes meaning or goes away."""

    @property
    def exit_code(self) -> int:
        """0 done; 1 failed (the record says why); 2 a conflict was kept."""

    def as_json(self) -> Any:
        """The document `--json` prints (its keys are the CLI's published output)."""


R = TypeVar("R", bound=Record, covariant=True)


class ExitStatus:
    """What an exit code means: 0 done, 2 a conflict was kept (or the remote is ahead)."""

    code: int

    @property
    def ok(self) -> bool:
        return self.code == 0

    @property
    def conflict(self) -> bool:
        return self.code == 2


@dataclass(frozen=True)
class Outcome(ExitStatus, Generic[R]):
    """A verb run by a face that cannot let an exception through (Hermes)."""

    code: int
    record: R | None = None
    error: str = ""
    error_kind: str = ""
    notices: list[str] = field(default_factory=list)


def call(verb: Callable[[Callable[[str], None]], R], what: str) -> Outcome[R]:
    """Run `verb(notify)`; a RoamError becomes its exit code and one-line message.

    Any other exception is a bug in roam: it is logged with its traceback and reported as
    an internal error, so it never takes the host process down with it.
    """
    notices: list[str] = []
    try:
        record = verb(notices.append)
    except RoamError as failure:
        return Outcome(failure.exit_code, None, first_line(str(failure), type(failure).__name__),
                       type(failure).__name__, notices)
    except Exception as failure:  # a bug in a verb must not take Hermes down with it
        log.warning("roam %s failed unexpectedly: %s", what, type(failure).__name__,
                    exc_info=True)
        return Outcome(1, None, f"internal error ({type(failure).__name__}); see the Hermes log",
                       type(failure).__name__, notices)
    return Outcome(record.exit_code, record, notices=notices)
