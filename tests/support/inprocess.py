"""Running a roam verb in-process, the way `roam` runs it, and capturing what it printed.

For tests that drive the CLI's words inside one process (a Hermes session's home, the
auto switches): the argv goes through the CLI's own parser (`roam_core.cli.main`), the
verb runs, and its stdout, stderr and exit code come back as a result, never an exit.
Output is captured per thread, so a verb on one thread never swallows another's.
(Hermes itself no longer runs verbs this way: `/roam` and the tools call the service.)
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from roam_core.errors import RoamError
from roam_core.service.outcome import ExitStatus
from roam_core.service.text import first_line

log = logging.getLogger("roam.tests")


@dataclass(frozen=True)
class VerbResult(ExitStatus):
    """What one verb run produced."""

    argv: tuple[str, ...]
    code: int
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    error_kind: str = ""

    def json(self) -> Any:
        """The verb's `--json` document, or None when stdout is not JSON."""
        text = self.stdout.strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None


class _ThreadRouter(io.TextIOBase):
    """A stand-in for sys.stdout/sys.stderr that sends one thread's writes to a buffer."""

    def __init__(self, fallback: TextIO, which: str) -> None:
        self.fallback = fallback
        self.which = which

    def _target(self) -> TextIO:
        buffers = getattr(_local, "buffers", None)
        return buffers[self.which] if buffers else self.fallback

    def write(self, text: str) -> int:
        self._target().write(text)
        return len(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False if getattr(_local, "buffers", None) else self.fallback.isatty()

    def fileno(self) -> int:
        return self.fallback.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.fallback, "encoding", "utf-8") or "utf-8"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fallback, name)


_local = threading.local()
_install_lock = threading.Lock()
_installed = 0


@contextlib.contextmanager
def captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Capture this thread's stdout and stderr; other threads keep printing normally."""
    global _installed
    out, err = io.StringIO(), io.StringIO()
    with _install_lock:
        if _installed == 0:
            sys.stdout = _ThreadRouter(sys.stdout, "out")
            sys.stderr = _ThreadRouter(sys.stderr, "err")
        _installed += 1
    outer = getattr(_local, "buffers", None)
    _local.buffers = {"out": out, "err": err}
    try:
        yield out, err
    finally:
        _local.buffers = outer
        with _install_lock:
            _installed -= 1
            if _installed == 0:
                # Only undo our own wrapper: someone may have replaced the stream since.
                for name in ("stdout", "stderr"):
                    stream = getattr(sys, name)
                    if isinstance(stream, _ThreadRouter):
                        setattr(sys, name, stream.fallback)


def _usage_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "invalid arguments"


def run_verb(argv: Sequence[str], home: Path | None = None) -> VerbResult:
    """Parse `argv` with the roam CLI's own parser and run the verb, capturing its output.

    `home` becomes `--home`; without it the verb resolves the home as the CLI does. Never
    raises for a failing verb: the error is in the result (`code` 1, or 2 for a conflict).
    """
    from roam_core.cli.main import build_parser

    full = ([f"--home={home}"] if home is not None else []) + list(argv)
    with captured() as (out, err):
        code, error, kind = _parse_and_run(build_parser(), full, err)
    stderr = err.getvalue()
    if error and not stderr.strip():
        stderr = f"roam: {error}\n"
    return VerbResult(tuple(argv), code, out.getvalue(), stderr, error, kind)


def _parse_and_run(parser: Any, argv: list[str], err: io.StringIO) -> tuple[int, str, str]:
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        if stop.code in (0, None):
            return 0, "", ""
        return 1, _usage_error(err.getvalue()), "UsageError"
    func = getattr(args, "func", None)
    if func is None:
        return 1, "no verb given", "UsageError"
    try:
        return int(func(args) or 0), "", ""
    except RoamError as failure:
        return (failure.exit_code, first_line(str(failure), type(failure).__name__),
                type(failure).__name__)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
        return code, "" if code == 0 else f"exited with status {code}", ""
    except Exception as failure:  # a bug in a verb must not take Hermes down with it
        log.warning("roam %s failed unexpectedly: %s", " ".join(argv[:2]),
                    type(failure).__name__, exc_info=True)
        return 1, f"internal error ({type(failure).__name__}); see the Hermes log", \
            type(failure).__name__
