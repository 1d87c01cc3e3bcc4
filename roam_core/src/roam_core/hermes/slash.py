"""`/roam …` in a Hermes chat: short, Telegram-friendly answers, no tables.

The words after `/roam` are validated completely before anything runs; each form names
the roam CLI words it stands for and calls the same service function that verb calls
(`roam_core.service`), and the record is rendered as a few plain lines: its `--json`
document, or for `diff` and `doctor` the lines the CLI prints. Switching auto sync on or
off, restoring and configuring are terminal-only on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roam_core.service.outcome import Outcome, Record, call
from roam_core.service.render import HasLines, Json, published
from roam_core.service.session import Notify
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


#: Forms whose answer is the lines the CLI prints for people, not the `--json` document.
TEXT_FORMS = ("diff", "doctor")


def verb_for(slash: SlashPlan, home: Path) -> Callable[[Notify], Record]:
    """The service call a validated form stands for (the function its CLI verb calls)."""
    from roam_core.service import doctor, review, verbs, views

    words = slash.argv
    if words[0] == "push":
        force, dry_run = "--force" in words, "--dry-run" in words
        return lambda notify: verbs.push(home, notify, force=force, dry_run=dry_run)
    if words[0] == "pull":
        apply, overwrite = "--apply" in words, "--overwrite-conflicts" in words
        return lambda notify: verbs.pull(home, notify, apply=apply,
                                         overwrite_conflicts=overwrite)
    simple: dict[str, Callable[[Notify], Record]] = {
        "status": lambda notify: verbs.status(home, notify),
        "diff": lambda notify: views.diff(home, notify),
        "devices": lambda notify: views.devices(home, notify),
        "sessions": lambda notify: views.sessions(home),
        "auto": lambda notify: views.auto_status(home),
        "doctor": lambda notify: doctor.doctor(home, notify),
        "history": lambda notify: review.history(home, notify),
    }
    return simple[words[0]]


def handle(raw: str) -> str:
    """The /roam handler Hermes calls with the raw words; always returns text."""
    from roam_core.hermes.host import hermes_home_dir, redact

    try:
        slash = plan(raw or "")
    except SlashUsageError as problem:
        return f"roam: {problem}\n{USAGE}"
    if slash is None:
        return HELP
    outcome = call(verb_for(slash, hermes_home_dir()), slash.title)
    return redact(render(slash, outcome))


def render(slash: SlashPlan, outcome: Outcome[Record]) -> str:
    """A few plain lines for a chat: the record's JSON, or its text, or the error."""
    record = outcome.record
    if record is None:
        prefix = "roam (conflict)" if outcome.conflict else "roam"
        why = outcome.error or "; ".join(outcome.notices) or "failed"
        return f"{prefix}: {sanitize(why)}"
    if slash.title in TEXT_FORMS and isinstance(record, HasLines):
        lines = [" ".join(line.split()) for line in record.lines()]
        lines = [line for line in lines if line]
    else:
        lines = json_lines(published(record.as_json()), slash.limit)
    if outcome.code != 0:
        lines.append(f"(exit {outcome.code}{': ' + outcome.error if outcome.error else ''})")
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"… {len(lines) - MAX_LINES} more"]
    text = "\n".join(lines) or f"roam {slash.title}: done"
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def _scalar(value: Json) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return sanitize(value)


def _inline(value: Json, width: int = 160) -> str:
    if isinstance(value, dict):
        parts = [f"{k}={len(v) if isinstance(v, list) else _scalar(v)}"
                 for k, v in value.items() if not isinstance(v, dict)]
        text = ", ".join(parts) or f"{len(value)} field(s)"
    elif isinstance(value, list):
        text = ", ".join(_inline(v, 40) for v in value[:5]) + (" …" if len(value) > 5 else "")
    else:
        text = _scalar(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def json_lines(document: Json, limit: int = MAX_LINES) -> list[str]:
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
