"""Printing for the CLI: aligned tables, JSON, and sanitizing text that came from elsewhere."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from roam_core.service.text import first_line, sanitize

__all__ = ["emit_json", "error", "note", "sanitize", "set_quiet", "table"]

_quiet = False


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO | None = None
) -> None:
    """Print an aligned table; the last column is never padded."""
    out = out or sys.stdout
    cells = [[sanitize(cell) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))

    def line(values: Sequence[str]) -> str:
        padded = [value.ljust(widths[i]) for i, value in enumerate(values[:-1])]
        return "  ".join([*padded, values[-1]]).rstrip()

    print(line(list(headers)), file=out)
    for row in cells:
        print(line(row), file=out)


def emit_json(value: Any, out: TextIO | None = None) -> None:
    """Print one JSON document."""
    print(json.dumps(value, indent=2, sort_keys=True, default=str), file=out or sys.stdout)


def error(message: str) -> None:
    """Print a one-line error as `roam: message` on stderr."""
    print(f"roam: {first_line(message)}", file=sys.stderr)


def set_quiet(quiet: bool) -> None:
    """`-q`: notices are dropped; results and errors still print."""
    global _quiet
    _quiet = quiet


def note(message: str) -> None:
    """Print a one-line notice on stderr (recoveries, warnings), unless `-q` was given."""
    if _quiet:
        return
    print(f"roam: {sanitize(message)}", file=sys.stderr)
