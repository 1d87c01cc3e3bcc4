"""`/roam …` in a Hermes chat: short, Telegram-friendly answers, no tables.

The words after `/roam` are validated completely before anything runs; each form maps to
one argv of the roam CLI, run in-process by `runner.run_verb` with `--json` when the verb
offers it, and the result is rendered as a few plain lines. Switching auto sync on or
off, restoring and configuring are terminal-only on purpose.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roam_core.hermes.runner import VerbResult, run_verb
from roam_core.service.text import sanitize

#: Telegram caps a message at 4096 characters; keep well below.
MAX_CHARS = 3500
MAX_LINES = 40
HISTORY_LIMIT = 10

USAGE = (
    "Usage: /roam status | push [force|dry|dry-run] | pull | pull apply | "
    "pull apply overwrite | diff | devices | sessions | auto | doctor | history | help"
)

HELP = "\n".join([
    "roam keeps this Hermes home in sync with your other machines (end-to-end encrypted).",
    "/roam status: where this home stands against the remote",
    "/roam push [force|dry|dry-run]: upload local changes (dry: only show them)",
    "/roam pull: show what a pull would change",
    "/roam pull apply [overwrite]: install it (overwrite: also replace local conflicts)",
    "/roam diff: local changes since the last sync",
    "/roam devices: the machines in this fleet",
    "/roam sessions: mirrored sessions (listing only)",
    "/roam auto: whether auto sync is on (switch it with `hermes roam auto on|off`)",
    "/roam doctor: check the setup",
    "/roam history: the last ten generations",
])


class SlashUsageError(ValueError):
    """The words after /roam are not one of the valid forms."""


@dataclass(frozen=True)
class SlashPlan:
    """One validated /roam form: the CLI words to run, and how many list items to show."""

    argv: tuple[str, ...]
    title: str
    limit: int = MAX_LINES


def plan(raw: str) -> SlashPlan | None:
    """Validate `raw` (the words after /roam); None means "show help"."""
    words = [w.lower() for w in raw.split()]
    if not words or words == ["help"]:
        return None
    verb, extra = words[0], words[1:]
    if verb == "push":
        flags = {"force": "--force", "dry": "--dry-run", "dry-run": "--dry-run"}
        if len(extra) > 1 or (extra and extra[0] not in flags):
            raise SlashUsageError("push takes one of: force, dry, dry-run")
        return SlashPlan(("push", *(flags[w] for w in extra)), "push")
    if verb == "pull":
        forms = {(): (), ("apply",): ("--apply",),
                 ("apply", "overwrite"): ("--apply", "--overwrite-conflicts")}
        if tuple(extra) not in forms:
            raise SlashUsageError("pull forms: pull | pull apply | pull apply overwrite")
        return SlashPlan(("pull", *forms[tuple(extra)]), "pull")
    simple = {"status": ("status",), "diff": ("diff",), "devices": ("devices",),
              "sessions": ("sessions",), "auto": ("auto", "status"), "doctor": ("doctor",),
              "history": ("history",)}
    if verb not in simple:
        raise SlashUsageError(f"unknown /roam form: {sanitize(verb)[:40]}")
    if extra:
        hint = " (switch auto sync from a terminal: hermes roam auto on|off)" \
            if verb == "auto" else ""
        raise SlashUsageError(f"/roam {verb} takes no further words{hint}")
    limit = HISTORY_LIMIT if verb == "history" else MAX_LINES
    return SlashPlan(simple[verb], verb, limit)


def _find(parser: argparse.ArgumentParser, words: Sequence[str]) -> \
        argparse.ArgumentParser | None:
    for word in words:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions or word not in actions[0].choices:
            return None
        parser = actions[0].choices[word]
    return parser


def resolve_argv(slash: SlashPlan) -> list[str] | None:
    """The CLI words for a form: `sessions` lists, and `--json` where the verb has it.

    None when this installation has no such verb (an optional part is not installed).
    """
    from roam_core.cli.main import build_parser

    root = build_parser()
    argv = list(slash.argv)
    if _find(root, argv[:1]) is None:
        return None
    if argv == ["sessions"] and _find(root, ["sessions", "list"]) is not None:
        argv = ["sessions", "list"]
    verb = _find(root, argv[:2]) or _find(root, argv[:1])
    wants_text = slash.title in ("diff", "doctor")
    if verb is not None and not wants_text and \
            any("--json" in a.option_strings for a in verb._actions):
        argv.append("--json")
    return argv


def handle(raw: str) -> str:
    """The /roam handler Hermes calls with the raw words; always returns text."""
    from roam_core.hermes.host import hermes_home_dir, redact

    try:
        slash = plan(raw or "")
    except SlashUsageError as problem:
        return f"roam: {problem}\n{USAGE}"
    if slash is None:
        return HELP
    argv = resolve_argv(slash)
    if argv is None:
        return f"roam: /roam {slash.title} is not available in this roam installation"
    result = run_verb(argv, home=hermes_home_dir())
    return redact(render(slash, result))


def render(slash: SlashPlan, result: VerbResult) -> str:
    """A few plain lines for a chat: the verb's JSON, or its text, or its error."""
    if result.code != 0 and not result.stdout.strip():
        prefix = "roam (conflict)" if result.conflict else "roam"
        return f"{prefix}: {sanitize(result.error or result.stderr.strip() or 'failed')}"
    document = result.json()
    if document is not None:
        lines = json_lines(document, slash.limit)
    else:
        lines = [" ".join(line.split()) for line in sanitize(result.stdout).splitlines()]
        lines = [line for line in lines if line]
    if result.code != 0:
        lines.append(f"(exit {result.code}{': ' + result.error if result.error else ''})")
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"… {len(lines) - MAX_LINES} more"]
    text = "\n".join(lines) or f"roam {slash.title}: done"
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return sanitize(value)


def _inline(value: Any, width: int = 160) -> str:
    if isinstance(value, dict):
        parts = [f"{k}={len(v) if isinstance(v, list) else _scalar(v)}"
                 for k, v in value.items() if not isinstance(v, dict)]
        text = ", ".join(parts) or f"{len(value)} field(s)"
    elif isinstance(value, list):
        text = ", ".join(_inline(v, 40) for v in value[:5]) + (" …" if len(value) > 5 else "")
    else:
        text = _scalar(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def json_lines(document: Any, limit: int = MAX_LINES) -> list[str]:
    """Render a JSON document as short `key: value` lines and `• item` bullets."""
    if isinstance(document, list):
        bullets = [f"• {_inline(item)}" for item in document[:limit]]
        if len(document) > limit:
            bullets.append(f"… {len(document) - limit} more")
        return bullets or ["(none)"]
    if not isinstance(document, dict):
        return [_scalar(document)]
    lines: list[str] = []
    for key, value in document.items():
        if isinstance(value, list):
            if not value:
                lines.append(f"{key}: none")
            elif all(not isinstance(v, (dict, list)) for v in value) and len(value) <= 8:
                lines.append(f"{key}: {', '.join(_scalar(v) for v in value)}")
            else:
                lines.append(f"{key}: {len(value)}")
                lines += [f"• {_inline(v)}" for v in value[:limit]]
        elif isinstance(value, dict):
            lines.append(f"{key}: {_inline(value)}")
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return lines
