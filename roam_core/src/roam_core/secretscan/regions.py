"""Where in a file's bytes a push rule could match: the few windows the rules have to read.

Running every rule over every byte costs about 10 MB/s in Python, and almost every byte of an
ordinary file is prose or code no rule can match. Every push rule's match holds one of:

* a run of `TOKEN_RUN` or more non-space bytes (tokens, keys, literal secrets, the
  20-character token after `bearer` or "my API key is");
* `://` (`ftp://u:pw@`, `redis://:pw@`, a token as a URL's user): its run, whatever its
  length;
* a separator (`=`, `:`) right after a secret-named key (`secret-assignment`, whose value
  may be as short as 8 characters; `url-secret-query`'s `?sig=abcdef`): every separator is
  found with `memchr` and the key before it is looked at;
* a literal secret shorter than `TOKEN_RUN` or holding white space: found with
  `bytes.find`;
* a private-key block (it spans lines and may be cut off) or a user's `redact_patterns`
  expression: the whole text is read then.

The runs and the key block are found in one pass by one RE2 program (google-re2, a
linear-time DFA in C: `compiled_cores`), or where it cannot be imported by one `translate`
and three big-integer operations (`int_runs`), a `memchr` for a slash and `bytes.find`s for
`://` and the key block; so a file without candidates costs one pass, or a few, at memory
speed.

A window is whole lines with one line of context either side (rules see what they would see
in the whole text); windows that touch are merged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from roam_core.secretscan.rules import MIN_RUN

#: The shortest match of every push rule but the URL and `name=value` ones (`xoxb-` + 10).
TOKEN_RUN = 15

_SPACE = b" \t\n\r\f\v\x1c\x1d\x1e\x1f"
#: `secret-assignment`'s keywords (its anchors); a separator with none of them in the bytes
#: before it on its line cannot end such a key.
_KEYWORDS = (b"token", b"secret", b"pass", b"pwd", b"api", b"access", b"private", b"archive",
             b"credential", b"sig", b"auth")  # the last two: url-secret-query's names
#: The same test run backwards from every separator at once, on the reversed lower-case
#: text, for files with so many separators (YAML, code) that a test each costs more.
_REVERSED_KEY = re.compile(rb"[=:][ \t\r\n\f\v]*['\"]?[a-z0-9_.-]*?(?:"
                           + b"|".join(word[::-1] for word in _KEYWORDS) + rb")")
#: A key's separators.
_SEPARATORS = (b"=", b":")
#: How far before a separator its key may start (a longer key name is not looked at).
KEY_REACH = 96
#: Lines longer than this (minified files) are cut, at white space, around a candidate.
LONG_LINE = 4096
#: A candidate's windows covering more than this share of a text: the whole text is read.
WHOLE_SHARE = 0.5


@functools.lru_cache(maxsize=8)
def _weighing(minimum: int) -> tuple[bytes, int, int]:
    """The flag table, the lane bit and `minimum` ones that find runs (`long_runs`).

    Each non-space byte weighs `weight`, white space 0; a lane (one byte of a big integer)
    sums the weights of `minimum` bytes. `weight` is chosen so that the sum reaches `bit`
    only when all `minimum` bytes weigh (`(minimum - 1) * weight < bit <= minimum *
    weight < 256`): then no lane carries into the next, and one `&` finds every full one.
    """
    for bit in (128, 64, 32, 16, 8, 4, 2, 1):
        weight = -(-bit // minimum)
        if (minimum - 1) * weight < bit <= minimum * weight <= 255:
            table = bytes(0 if byte in _SPACE else weight for byte in range(256))
            return table, bit, int.from_bytes(b"\1" * minimum, "little")
    raise ValueError(f"no lane weighing for runs of {minimum}")


#: Big integers whose low `size` bytes all hold one value, grown by doubling up to
#: `KEPT_MASK` bytes; an `&` with a longer one costs only the shorter's length.
_REPEATED: dict[int, tuple[int, int]] = {}
#: Longer masks (files over 1 MiB) are made for the call: a long-lived process (a Hermes
#: gateway that pushes) does not keep a chunk-sized integer for ever.
KEPT_MASK = 1 << 20


def _repeated(byte: int, size: int) -> int:
    value, have = _REPEATED.get(byte, (0, 0))
    if have < size:
        if size > KEPT_MASK:
            return int.from_bytes(bytes([byte]) * size, "little")
        have = min(max(size, 2 * have, 1 << 16), KEPT_MASK)
        value = int.from_bytes(bytes([byte]) * have, "little")
        _REPEATED[byte] = (value, have)
    return value


def flags_of(data: bytes, minimum: int = TOKEN_RUN) -> bytes:
    """`data` with each byte replaced by its weight for runs of `minimum` (0: white space)."""
    return data.translate(_weighing(minimum)[0])


@functools.lru_cache(maxsize=4)
def compiled_runs(minimum: int) -> Any | None:
    """RE2's program for runs of `minimum` or more non-space bytes; None without google-re2.

    RE2 runs a DFA over the bytes in one pass (~2.5× the four C passes of `int_runs` on
    prose, docs/benchmarks.md). Latin-1 mode: every byte is one character, so invalid UTF-8
    and NUL bytes are non-space bytes here as in `int_runs` (in RE2's UTF-8 mode an invalid
    byte matches no class at all and would end a run).
    """
    try:
        import re2  # a dependency of roam-core; roam still works (slower) without it
    except ImportError:
        return None
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.never_capture = True
    space = b"".join(b"\\x%02x" % byte for byte in _SPACE)
    return re2.compile(b"[^" + space + b"]{%d,}" % minimum, options)


#: What makes `windows` read a whole text: a private-key block (it spans lines, may be cut).
KEY_BLOCK = b"PRIVATE KEY"


def compiled_cores() -> Any | None:
    """RE2's one program for every candidate a run gives; None without google-re2.

    Three alternatives, in this order (RE2 keeps Perl's leftmost-first choice): a run
    ending in `PRIVATE` followed by ` KEY` (a key block: the whole text is read), a run
    holding `://` whatever its length (URL passwords and tokens), a run of `TOKEN_RUN` or
    more non-space bytes. Each match but the first kind is a whole maximal run, so one pass
    gives what `long_runs`, `url_runs` and a search for `KEY_BLOCK` gave in three (one of
    them a `translate` for every text holding a URL), at the same speed per byte.
    """
    runs = compiled_runs(TOKEN_RUN)  # None without google-re2
    return None if runs is None else _cores_program(runs)


@functools.lru_cache(maxsize=1)
def _cores_program(runs: Any) -> Any:
    """`compiled_cores`'s program, made once per `compiled_runs` program (the same module)."""
    import re2

    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.never_capture = True
    run = b"[^" + b"".join(b"\\x%02x" % byte for byte in _SPACE) + b"]"
    return re2.compile(run + b"*PRIVATE KEY|" + run + b"*://" + run + b"*|"
                       + run + b"{%d,}" % TOKEN_RUN, options)


def cores(data: bytes) -> list[tuple[int, int]] | None:
    """The runs `windows` starts from; None when `data` holds `KEY_BLOCK` (read it whole).

    Every maximal run of `TOKEN_RUN` or more non-space bytes, and every one holding `://`.
    """
    program = compiled_cores()
    if program is None:
        if KEY_BLOCK in data:
            return None
        flags = flags_of(data)
        return [*int_runs(data, TOKEN_RUN, flags), *url_runs(data, flags)]
    found = []
    for match in program.finditer(data):
        start, end = match.span()
        if data.endswith(KEY_BLOCK, start, end):
            return None  # the first occurrence always ends a match (see `compiled_cores`)
        found.append((start, end))
    return found


def long_runs(data: bytes, minimum: int = MIN_RUN) -> Iterator[tuple[int, int]]:
    """Every maximal run of at least `minimum` non-space bytes, as (start, end)."""
    program = compiled_runs(minimum)
    if program is None:
        yield from int_runs(data, minimum)
        return
    # Leftmost-first and greedy: each match starts where a run starts and ends where it
    # ends, and the search goes on after it, so the matches are the maximal runs.
    for match in program.finditer(data):
        yield match.span()


def int_runs(data: bytes, minimum: int = MIN_RUN, flags: bytes | None = None
             ) -> Iterator[tuple[int, int]]:
    """`long_runs` without RE2: with a `translate` and three big-integer operations.

    `flags`, if given, is `flags_of(data, minimum)`. Three big-integer operations in C find
    every run: the weights as one integer, times `minimum` ones (each lane then sums the
    `minimum` weights ending there), `&` the lane bit (set only where all of them weigh).
    Text without such a run (prose) costs those and nothing else.
    """
    table, bit, ones = _weighing(minimum)
    flags = data.translate(table) if flags is None else flags
    size = len(flags) + minimum
    hits = int.from_bytes(flags, "little") * ones & _repeated(bit, size)
    if not hits:
        return
    ends = hits.to_bytes(size, "little")  # a lane holding `bit`: a full window ends there
    at = ends.find(bit)
    while 0 <= at < len(flags):
        end = flags.find(0, at)
        end = len(flags) if end < 0 else end
        yield at - minimum + 1, end
        at = ends.find(bit, max(end, at + 1))


def _separators(data: bytes, limit: int) -> list[int] | None:
    """Positions of every `=` and `:` (a `memchr` each); None when there are over `limit`."""
    found: list[int] = []
    for separator in _SEPARATORS:
        at = data.find(separator)
        while at >= 0:
            found.append(at)
            if len(found) > limit:
                return None
            at = data.find(separator, at + 1)
    return found


def key_separators(data: bytes) -> Iterator[int]:
    """Positions of `=`/`:` that may end a secret-named key (a superset, never fewer)."""
    found = _separators(data, len(data) >> 6)
    if found is None:  # dense: one C pass beats a Python test per separator
        lowered = data.lower()[::-1]
        last = len(data) - 1
        for match in _REVERSED_KEY.finditer(lowered):
            yield last - match.start()
        return
    for at in found:
        before = data[max(0, at - KEY_REACH):at].lower()
        if any(word in before for word in _KEYWORDS):
            yield at


def url_runs(data: bytes, flags: bytes | None = None) -> Iterator[tuple[int, int]]:
    """The runs (of any length) holding `://`; `flags` is `flags_of(data)` if given."""
    if data.find(b"/") < 0:  # a `memchr`: most prose holds no slash at all
        return
    at = data.find(b"://")
    if at >= 0 and flags is None:
        flags = flags_of(data)  # a pass made only for text that holds a URL
    while at >= 0:
        assert flags is not None
        end = flags.find(0, at)
        end = len(data) if end < 0 else end
        yield flags.rfind(0, 0, at) + 1, end
        at = data.find(b"://", end)


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
    found_cores = None if whole else cores(data)
    if found_cores is None:
        return [(0, len(data))] if data else []
    found_cores += [(at, at + 1) for at in key_separators(data)]
    for literal in literals:
        at = data.find(literal)
        while at >= 0:
            found_cores.append((at, at + len(literal)))
            at = data.find(literal, at + 1)
    found = merge((_line_start(data, start), _line_end(data, end))
                  for start, end in found_cores)
    if sum(end - start for start, end in found) > WHOLE_SHARE * len(data):
        return [(0, len(data))]
    return found
