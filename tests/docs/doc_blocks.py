"""Reading the command blocks out of roam's Markdown, and running them as a user would.

A shell block (```bash or ```console) is preceded by a marker comment that says how a test
exercises it::

    <!-- doc-test: on=laptop only=local,s3 setup=NAME -->   run it on that machine
    <!-- doc-test: on=desktop file=~/.hermes/roam/rules.yaml -->   write the block as a file
    <!-- doc-test: parse covered-by=tests/x.py -->   parse every roam command; x.py runs them

`console` blocks hold `$ command` lines followed by the output the reader should see; the
output is compared line by line, in order, with `...` matching any text within a line and
lines of the real output allowed in between (a reader's terminal shows more than the guide).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL_LANGS = ("bash", "sh", "shell", "console")
MARKER = re.compile(r"^<!--\s*doc-test:(?P<body>.*?)-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")


@dataclass
class Block:
    """One fenced block and its marker."""

    path: Path
    line: int
    lang: str
    text: str
    options: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    marked: bool = False

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def shell(self) -> bool:
        return self.lang in SHELL_LANGS

    def runs_in(self, scenario: str) -> bool:
        if "on" not in self.options:
            return False
        only = self.options.get("only")
        return only is None or scenario in only.split(",")

    def commands(self) -> list[str]:
        """The command lines of the block (`$ ` lines of a console block, else every line)."""
        lines = self.text.splitlines()
        if self.lang == "console":
            return [line[2:] for line in lines if line.startswith("$ ")]
        return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def parse_marker(body: str) -> tuple[dict[str, str], set[str]]:
    options: dict[str, str] = {}
    flags: set[str] = set()
    for word in body.split():
        if "=" in word:
            key, _, value = word.partition("=")
            options[key] = value
        elif word.startswith("("):
            break  # a free-text reason follows
        else:
            flags.add(word)
    return options, flags


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the marker right above it (if any)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith("```"):
            body.append(lines[index][len(fence.group("indent")):])
            index += 1
        index += 1
        block = Block(path, start + 1, fence.group("lang"), "\n".join(body) + "\n")
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = MARKER.match(lines[previous].strip()) if previous >= 0 else None
        if marker:
            block.options, block.flags = parse_marker(marker.group("body"))
            block.marked = True
        found.append(block)
    return found


def markdown_files() -> list[Path]:
    """Every Markdown page a user or plugin author reads."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted((REPO / "_template").glob("*/README.md"))]


# -- commands inside a line ------------------------------------------------------------

_SEPARATORS = {";", "&&", "||", "|", "&"}


def roam_invocations(line: str) -> Iterator[list[str]]:
    """The argument lists of every `roam …` (or `hermes roam …`) command on a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    command: list[str] = []
    for word in [*words, ";"]:
        if word in _SEPARATORS:
            if command[:1] == ["roam"]:
                yield command[1:]
            elif command[:2] == ["hermes", "roam"]:
                yield command[2:]
            command = []
        else:
            command.append(word)


# -- comparing output ------------------------------------------------------------------


def console_steps(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.rstrip().split("...")))


def missing_lines(expected: list[str], actual: str) -> list[str]:
    """Expected lines not found, in order, in `actual` (empty when the output matches)."""
    lines = [line.rstrip() for line in actual.splitlines()]
    position = 0
    for wanted in expected:
        if not wanted.strip() or wanted.strip() == "...":
            continue
        pattern = _pattern(wanted)
        while position < len(lines) and not pattern.fullmatch(lines[position]):
            position += 1
        if position == len(lines):
            return [wanted]
        position += 1
    return []


def run_shell(script: str, env: dict[str, str], cwd: Path,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `script` with bash as a reader's terminal would (stderr merged into stdout)."""
    return subprocess.run(["bash", "-o", "pipefail", "-c", script], env=env, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
