"""Glob patterns over relative POSIX paths, and what a pattern can say about a directory.

Patterns are anchored at the home: `SOUL.md` names the top-level file only, `**/.env` names
it at any depth. A segment `**` matches zero or more segments; `*`, `?` and `[...]` never
cross `/`. A trailing `/` makes a directory rule: it matches everything below that directory.

`relation(dir)` answers, without listing anything, whether a pattern can match nothing, some
or every path below a directory; the walk uses it to prune directories it must not enter.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

_SAFE_SEGMENT = re.compile(r"^[^\x00]+$")


class Relation(enum.Enum):
    """How a pattern relates to the paths below one directory."""

    NONE = "none"
    MAYBE = "maybe"
    COVERS = "covers"


class PatternError(ValueError):
    """A pattern is malformed; the message says why."""


def _translate_segment(segment: str) -> str:
    """One glob segment as a regex fragment in which nothing crosses `/`."""
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 1 if segment[index:index + 1] in ("!", "]") else index)
            if end < 0:
                out.append(re.escape(char))
                continue
            body = segment[index:end]
            index = end + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def _translate(segments: tuple[str, ...]) -> str:
    """A whole pattern (list of segments) as one anchored regex over the relative path."""
    parts: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":  # zero or more whole segments
            if index == 0:
                parts.append("[^/]+(?:/[^/]+)*" if index == last else "(?:[^/]+/)*")
            else:
                parts.append("(?:/[^/]+)*" if index == last else "(?:/[^/]+)*/")
            continue
        if index > 0 and segments[index - 1] != "**":
            parts.append("/")
        parts.append(_translate_segment(segment))
    return "".join(parts)


def _covers_every_suffix(rest: tuple[str, ...]) -> bool:
    """Whether pattern segments `rest` match every non-empty sequence of further segments."""
    return ("**" in rest and all(segment in ("*", "**") for segment in rest)
            and rest.count("*") <= 1)


@lru_cache(maxsize=4096)
def _segment_regex(segment: str, ignore_case: bool) -> re.Pattern[str]:
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(_translate_segment(segment) + r"\Z", flags)


@lru_cache(maxsize=4096)
def segment_test(segment: str, ignore_case: bool) -> Callable[[str], bool]:
    """Whether a folder name matches one glob segment (never `**`), as a fast callable."""
    if not ignore_case and not re.search(r"[*?\[]", segment):  # a literal: plain equality
        return segment.__eq__
    match = _segment_regex(segment, ignore_case).match
    return lambda name: match(name) is not None


@lru_cache(maxsize=1024)
def segments_regex(segments: tuple[tuple[str, bool], ...]) -> re.Pattern[str]:
    """One regex matching a name that matches any of `segments` ((segment, ignore_case))."""
    body = "|".join(f"(?i:{_translate_segment(s)})" if folded else f"(?:{_translate_segment(s)})"
                    for s, folded in segments)
    return re.compile(f"(?:{body})\\Z", re.DOTALL)


def escape(path: str) -> str:
    """A pattern matching the literal relative path `path` (glob characters neutralised)."""
    return re.sub(r"([*?\[])", r"[\1]", path)


def split_pattern(pattern: str) -> tuple[tuple[str, ...], bool]:
    """Validate a pattern and return its segments and whether it is a directory rule."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise PatternError("a pattern must be a non-empty string")
    if pattern != pattern.strip():
        raise PatternError(f"pattern {pattern!r} has leading or trailing spaces")
    if pattern.startswith("/"):
        raise PatternError(f"pattern {pattern!r} must be relative to the home (drop the "
                           "leading '/')")
    if "\\" in pattern:
        raise PatternError(f"pattern {pattern!r} must use '/' between folders")
    directory = pattern.endswith("/")
    segments = tuple(pattern.rstrip("/").split("/")) if pattern.rstrip("/") else ()
    # `**/**` means the same as `**`; collapsing keeps the regex simple
    segments = tuple(s for i, s in enumerate(segments)
                     if not (s == "**" and i > 0 and segments[i - 1] == "**"))
    if not segments:
        raise PatternError(f"pattern {pattern!r} names nothing")
    for segment in segments:
        if segment in ("", ".", "..") or not _SAFE_SEGMENT.match(segment):
            raise PatternError(f"pattern {pattern!r} has an empty, '.' or '..' segment")
        if "**" in segment and segment != "**":
            raise PatternError(f"pattern {pattern!r}: '**' must be a whole segment")
    return segments, directory


@dataclass(frozen=True)
class Glob:
    """A compiled pattern. `ignore_case` is used for the hard never-list (case-folding disks)."""

    pattern: str
    ignore_case: bool = False
    segments: tuple[str, ...] = field(init=False)
    directory: bool = field(init=False)
    source: str = field(init=False, repr=False, compare=False)
    _regex: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    #: answers per automaton state set; a pattern has only a handful of distinct sets, so
    #: these stay small however many folders a walk visits
    _relations: dict[frozenset[int], Relation] = field(
        init=False, repr=False, compare=False, default_factory=dict)
    _names: dict[frozenset[int], str | None] = field(
        init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        segments, directory = split_pattern(self.pattern)
        if directory:
            # `dir/` matches every path with at least one segment below `dir`
            segments = (*segments, "*", "**")
        object.__setattr__(self, "segments", segments)
        object.__setattr__(self, "directory", directory)
        object.__setattr__(self, "source", _translate(segments))
        object.__setattr__(self, "_regex", None)
        if "[" in self.pattern:  # only a bracket can be malformed: say so when it is read
            self._compiled()

    def _compiled(self) -> re.Pattern[str]:
        # compiled on first use: most rules of a command are never asked about a whole path
        found = self._regex
        if found is None:
            flags = re.DOTALL | (re.IGNORECASE if self.ignore_case else 0)
            try:
                found = re.compile(self.source + r"\Z", flags)
            except re.error as error:
                raise PatternError(f"pattern {self.pattern!r}: {error}") from None
            object.__setattr__(self, "_regex", found)
        return found

    def matches(self, rel: str) -> bool:
        """Whether the relative POSIX path `rel` (a file) matches."""
        return self._compiled().match(rel) is not None

    # The pattern as an automaton over folder names: a walk carries each pattern's state set
    # from a folder to its subfolders, one step per level, instead of re-reading the path.

    def start(self) -> frozenset[int]:
        """The automaton's states at the root of the home."""
        return frozenset(self._closure({0}))

    def advance(self, states: frozenset[int], name: str) -> frozenset[int]:
        """The states inside the subfolder `name` of a folder whose states are `states`."""
        return frozenset(self._closure(self._step(set(states), name))) if states else states

    def relation(self, dir_segments: tuple[str, ...]) -> Relation:
        """Whether this pattern matches none, some or all paths strictly below a directory."""
        states = self.start()
        for name in dir_segments:
            states = self.advance(states, name)
        return self.relation_at(states)

    def relation_at(self, states: frozenset[int]) -> Relation:
        """`relation` for the folder where the automaton is in `states`."""
        found = self._relations.get(states)
        if found is None:
            size = len(self.segments)
            if any(_covers_every_suffix(self.segments[state:]) for state in states):
                found = Relation.COVERS
            elif any(state < size for state in states):
                found = Relation.MAYBE
            else:
                found = Relation.NONE
            self._relations[states] = found
        return found

    def name_source(self, states: frozenset[int]) -> str | None:
        """A regex (source) for the names of files directly in the folder at `states`.

        None when no file directly in that folder can match. Lets a file be decided from
        its name alone, once the folder's part of every pattern has been consumed.
        """
        if states in self._names:
            return self._names[states]
        size = len(self.segments)
        options: list[str] = []
        for state in sorted(states):
            if state >= size:
                continue
            segment = self.segments[state]
            if segment == "**":
                if size in self._closure({state}):
                    options.append("[^/]+")
            elif size in self._closure({state + 1}):
                options.append(_translate_segment(segment))
        found = "|".join(dict.fromkeys(options)) or None
        self._names[states] = found
        return found

    def _closure(self, states: set[int]) -> set[int]:
        result = set(states)
        pending = list(states)
        while pending:
            state = pending.pop()
            if state < len(self.segments) and self.segments[state] == "**" \
                    and state + 1 not in result:
                result.add(state + 1)
                pending.append(state + 1)
        return result

    def _step(self, states: set[int], name: str) -> set[int]:
        following: set[int] = set()
        for state in states:
            if state >= len(self.segments):
                continue
            segment = self.segments[state]
            if segment == "**":
                following.add(state)
            elif segment_test(segment, self.ignore_case)(name):
                following.add(state + 1)
        return following


@lru_cache(maxsize=4096)
def first_match_regex(sources: tuple[str, ...], ignore_case: bool) -> re.Pattern[str]:
    """One regex for an ordered list of alternatives: `lastgroup` names the first that matches.

    Alternatives are tried in order and each is anchored at both ends, so the alternative
    that matches is the first matching rule: first-match-wins in one call into the regex
    engine instead of one call per rule.
    """
    body = "|".join(f"(?P<g{index}>(?:{source}))\\Z" for index, source in enumerate(sources))
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(f"(?:{body})", flags)
