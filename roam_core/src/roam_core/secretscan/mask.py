"""Masking text with the rule table and the literal secrets (the mirror's redaction)."""

from __future__ import annotations

from collections.abc import Iterable

from roam_core.secretscan.rules import RULES, Rule, Runs

MASK = "[REDACTED]"
PRIVATE_KEY_MASK = "[REDACTED PRIVATE KEY]"


def mask_rule(rule: Rule, text: str, lowered: str | None = None,
              runs: Runs | None = None) -> str:
    """`text` with every secret `rule` finds replaced by the mask."""
    spans = sorted(set(rule.secrets(text, lowered=lowered, runs=runs)))
    if not spans:
        return text
    replacement = PRIVATE_KEY_MASK if rule.name == "private-key" else MASK
    parts: list[str] = []
    last = 0
    for start, end in spans:
        if start < last:  # overlaps the previous mask (anchored rules may find both)
            start = last
            if end <= start:
                continue
        parts.append(text[last:start])
        parts.append(replacement)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def mask_literals(text: str, literals: Iterable[str]) -> str:
    """`text` with every literal secret (longest first, as given) replaced by the mask."""
    for literal in literals:
        if literal in text:
            text = text.replace(literal, MASK)
    return text


def mask_text(text: str, literals: Iterable[str] = (), extra: Iterable[Rule] = ()) -> str:
    """Literal secrets first (a literal may have any shape), then every rule, then `extra`."""
    text = mask_literals(text, literals)
    # Masking only removes text, so the hints of the original stay a safe superset.
    lowered = text.lower()
    runs: Runs | None = None
    for rule in (*RULES, *extra):
        if rule.local and runs is None:
            runs = Runs(text)
        masked = mask_rule(rule, text, lowered, runs if rule.local else None)
        if masked is not text:  # a mask moved the offsets: the runs are made again
            text, runs = masked, None
    return text
