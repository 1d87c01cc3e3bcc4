"""Where in a file's bytes a push rule could match: the few windows the rules have to read.

Running every rule over every byte costs about 10 MB/s in Python, and almost every byte of an
ordinary file is prose or code no rule can match. Every push rule's match holds one of:

* a run of `TOKEN_RUN` or more non-space bytes (tokens, keys, URLs, literal secrets, the
  20-character token after `bearer` or "my API key is"), or a shorter run of `MIN_RUN` or
  more holding `://` or `=` (`ftp://u:pw@`, `?sig=abcdef`): found with one `translate` and
  a few big-integer shifts, all in C, so a file without such runs costs a few passes at
  memory speed;
* a separator (`=`, `:`) right after a secret-named key (`secret-assignment`, whose value
  may be as short as 8 characters);
* a private-key header, a literal secret that is short or holds white space, or a
  user's `redact_patterns` expression: the whole text is read then.

A window is whole lines with one line of context either side (rules see what they would see
in the whole text); windows that touch are merged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from roam_core.secretscan.rules import MIN_RUN

#: The shortest match of every push rule but the URL and `name=value` ones (`xoxb-` + 10).
TOKEN_RUN = 15

_SPACE = b" \t\n\r\f\v\x1c\x1d\x1e\x1f"
#: A key's separators, flagged apart so one `count` over the flags counts them all.
_SEPARATOR = 3
#: Each byte to 1 (part of a run), 0 (white space) or 3 (a separator, also part of a run):
#: bit 0 of each flag is what the big-integer run search reads.
_FLAGS = bytes(0 if byte in _SPACE else _SEPARATOR if byte in b"=:" else 1
               for byte in range(256))
#: `secret-assignment`'s keywords (its anchors); a separator with none of them in the bytes
#: before it on its line cannot end such a key.
_KEYWORDS = (b"token", b"secret", b"pass", b"pwd", b"api", b"access", b"private", b"archive",
             b"credential", b"sig", b"auth")  # the last two: url-secret-query's names
#: The same test run backwards from every separator at once, on the reversed lower-case
#: text, for files with so many separators (YAML, code) that a test each costs more.
_REVERSED_KEY = re.compile(rb"[=:][ \t\r\n\f\v]*['\"]?[a-z0-9_.-]*?(?:"
                           + b"|".join(word[::-1] for word in _KEYWORDS) + rb")")
#: How far before a separator its key may start (a longer key name is not looked at).
KEY_REACH = 96
#: Lines longer than this (minified files) are cut, at white space, around a candidate.
LONG_LINE = 4096
#: A candidate's windows covering more than this share of a text: the whole text is read.
WHOLE_SHARE = 0.5


def flags_of(data: bytes) -> bytes:
    """`data` with each byte replaced by its flag (white space, separator, other)."""
    return data.translate(_FLAGS)


def long_runs(data: bytes, minimum: int = MIN_RUN, flags: bytes | None = None
              ) -> Iterator[tuple[int, int]]:
    """Every maximal run of at least `minimum` non-space bytes, as (start, end).

    (A run made only of separators, `==========`, is not one: it holds no secret.)
    """
    flags = flags_of(data) if flags is None else flags
    marks = int.from_bytes(flags, "little")
    # Bit 8*i of `marks` ends up set where `minimum` non-space bytes start at byte i:
    # runs of `width` are doubled by and-ing with themselves shifted by up to `width`.
    width = 1
    while width < minimum:
        step = min(width, minimum - width)
        marks &= marks >> (8 * step)
        width += step
    if not marks:
        return
    starts = marks.to_bytes(len(flags), "little")
    at = starts.find(1)
    while at >= 0:
        end = flags.find(0, at)
        end = len(flags) if end < 0 else end
        yield at, end
        at = starts.find(1, end)


def key_separators(data: bytes, flags: bytes | None = None) -> Iterator[int]:
    """Positions of `=`/`:` that may end a secret-named key (a superset, never fewer)."""
    flags = flags_of(data) if flags is None else flags
    count = flags.count(_SEPARATOR)
    if not count:
        return
    if count * 64 > len(data):  # dense: one C pass beats a Python test per separator
        lowered = data.lower()[::-1]
        last = len(data) - 1
        for match in _REVERSED_KEY.finditer(lowered):
            yield last - match.start()
        return
    at = flags.find(_SEPARATOR)
    while at >= 0:
        before = data[max(0, at - KEY_REACH):at].lower()
        if any(word in before for word in _KEYWORDS):
            yield at
        at = flags.find(_SEPARATOR, at + 1)


def _line_start(data: bytes, at: int) -> int:
    """The start of the line before the one holding `at` (bounded for very long lines)."""
    floor = max(0, at - LONG_LINE)
    start = data.rfind(b"\n", floor, at) + 1
    if start == 0 and floor > 0:  # a very long line: start at white space, not mid-word
        return _after_space(data, floor)
    if start > 0:
        start = data.rfind(b"\n", max(0, start - 1 - LONG_LINE), start - 1) + 1
    return start


_WHITE = re.compile(rb"\s")


def _after_space(data: bytes, at: int) -> int:
    match = _WHITE.search(data, at, min(len(data), at + 256))
    return match.end() if match else at


def _line_end(data: bytes, at: int) -> int:
    """The end of the line after the one holding `at` (bounded for very long lines)."""
    ceiling = min(len(data), at + LONG_LINE)
    end = data.find(b"\n", at, ceiling)
    if end < 0:
        return ceiling
    after = data.find(b"\n", end + 1, min(len(data), end + 1 + LONG_LINE))
    return min(len(data), end + 1 + LONG_LINE) if after < 0 else after


def merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-touching (start, end) ranges covering `spans`."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def windows(data: bytes, literals: Iterable[bytes] = (), whole: bool = False
            ) -> list[tuple[int, int]]:
    """The (start, end) byte ranges of `data` the push rules must read.

    `literals` are this machine's literal secrets that a run search might not cover (shorter
    than `TOKEN_RUN`, or holding white space); `whole` asks for the whole text (a user's
    own expressions).
    """
    if whole or b"PRIVATE KEY" in data:
        return [(0, len(data))] if data else []
    flags = flags_of(data)
    cores = [(start, end) for start, end in long_runs(data, flags=flags)
             if end - start >= TOKEN_RUN or b"://" in data[start:end]
             or _SEPARATOR in flags[start:end]]
    cores += [(at, at + 1) for at in key_separators(data, flags)]
    for literal in literals:
        at = data.find(literal)
        while at >= 0:
            cores.append((at, at + len(literal)))
            at = data.find(literal, at + 1)
    found = merge((_line_start(data, start), _line_end(data, end)) for start, end in cores)
    if sum(end - start for start, end in found) > WHOLE_SHARE * len(data):
        return [(0, len(data))]
    return found
