"""Printing for the CLI: aligned tables, JSON, and sanitizing text that came from elsewhere."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

_quiet = False

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def sanitize(text: object) -> str:
    """Remove control and terminal-escape characters from text derived from a remote."""
    return _UNSAFE.sub("", str(text))


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
    first = sanitize(message).strip().splitlines() or ["error"]
    print(f"roam: {first[0]}", file=sys.stderr)


def set_quiet(quiet: bool) -> None:
    """`-q`: notices are dropped; results and errors still print."""
    global _quiet
    _quiet = quiet


def note(message: str) -> None:
    """Print a one-line notice on stderr (recoveries, warnings), unless `-q` was given."""
    if _quiet:
        return
    print(f"roam: {sanitize(message)}", file=sys.stderr)
