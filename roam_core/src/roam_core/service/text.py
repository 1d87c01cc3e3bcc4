"""Making text from elsewhere safe to show: both faces print what a remote or a home named."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def sanitize(text: object) -> str:
    """Remove control and terminal-escape characters from text derived from a remote."""
    return _UNSAFE.sub("", str(text))


def first_line(message: str, fallback: str = "error") -> str:
    """The first line of a sanitized message: errors are one line in every face."""
    lines = sanitize(message).strip().splitlines()
    return lines[0] if lines else fallback
