"""roam's argparse conventions: usage errors exit 64 with a suggestion; global flags anywhere.

Exit 2 is taken: it means "behind, or conflicts kept". A usage error therefore exits 64
(EX_USAGE from sysexits.h) and names the nearest verb or flag, as git does. `--home`, `-v`
and `-q` are added to every verb as well as before it, so `roam push -v` and
`roam -v push` mean the same; `--json` before the verb is honoured where the verb has it.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

#: EX_USAGE: the command was used incorrectly (sysexits.h).
EX_USAGE = 64

_CHOICE = re.compile(r"invalid choice: '([^']*)'")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


class RoamParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors exit 64 and suggest the closest verb or flag."""

    _words: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        # the words as this parser saw them, so an error can find the verb they belong to
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        # a stray flag is reported by the top parser; show the usage of the verb it followed
        where = _leaf(self, self._words) if _UNRECOGNIZED.search(message) else self
        hint = self._suggestion(message, where)
        where.print_usage(sys.stderr)
        text = f"{message} (did you mean {hint!r}?)" if hint else message
        self.exit(EX_USAGE, f"{where.prog}: error: {text}\n")

    def _suggestion(self, message: str, where: argparse.ArgumentParser) -> str | None:
        choice = _CHOICE.search(message)
        if choice:
            names = [name for action in _subparser_actions(self) for name in action.choices]
            return _closest(choice.group(1), names)
        unknown = _UNRECOGNIZED.search(message)
        if unknown:
            word = unknown.group(1).split()[0].split("=")[0]
            flags = [flag for action in where._actions for flag in action.option_strings
                     if not isinstance(action, argparse._HelpAction)]
            return _closest(word, flags) if word.startswith("-") else None
        return None


def _closest(word: str, candidates: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def _subparser_actions(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _leaf(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.ArgumentParser:
    """The innermost parser the words select (the verb a stray flag was meant for)."""
    for word in words:
        for action in _subparser_actions(parser):
            if word in action.choices:
                parser = action.choices[word]
                break
    return parser


def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser below `parser` (each verb and sub-verb once, aliases skipped)."""
    seen: set[int] = set()
    for action in _subparser_actions(parser):
        for child in action.choices.values():
            if id(child) not in seen:
                seen.add(id(child))
                yield child
                yield from walk(child)


def add_global_flags(parser: argparse.ArgumentParser) -> None:
    """`--home`, `-v/-vv`, `-q` and `--json` before the verb (with their defaults)."""
    parser.add_argument("--home", metavar="DIR",
                        help="the Hermes home (default: $HERMES_HOME, else ~/.hermes)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log each remote request and timings (-vv: more detail)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only results and errors (no progress, no notices)")
    parser.add_argument("--json", dest="global_json", action="store_true",
                        help="print JSON (for verbs that have --json)")


def spread_global_flags(parser: argparse.ArgumentParser) -> None:
    """Let every verb below `parser` take `--home`, `-v` and `-q` after its name too.

    They default to SUPPRESS on the verbs, so a flag given before the verb is not reset
    by the verb's own defaults (argparse copies a verb's namespace over the top one).
    """
    for child in walk(parser):
        taken = {flag for action in child._actions for flag in action.option_strings}
        group = child.add_argument_group("global options")
        if "--home" not in taken:
            group.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS,
                               help="the Hermes home (default: $HERMES_HOME, else ~/.hermes)")
        if "-v" not in taken:
            group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                               help="log each remote request and timings (-vv: more)")
        if "-q" not in taken:
            group.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                               help="print only results and errors")


def apply_global_json(args: argparse.Namespace) -> str | None:
    """Fold a `--json` given before the verb into the verb's own; the error when it has none."""
    if not getattr(args, "global_json", False):
        return None
    if not hasattr(args, "json"):
        verb = " ".join(w for w in (getattr(args, "command", None),) if w)
        return f"roam {verb or ''}".rstrip() + " has no --json"
    args.json = True
    return None
