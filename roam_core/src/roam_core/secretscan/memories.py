"""`redact_memories`: a memory entry with a secret in it travels as a redacted copy.

Hermes's memory files are lists of entries (roam_core.merge.memory). With the setting on, a
push that finds secret-looking values in such a file does not stop: each entry holding one
is uploaded with the values masked, the local file keeps the original, and the push warns
naming the entry. The redacted copy is what the other devices and the store hold; a later
pull merges entry by entry, and this device's original counts as its own edit of that entry,
so it is never overwritten by the redacted copy (docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from roam_core.merge.memory import is_memory_file, parse_entries, render_entries
from roam_core.secretscan.mask import MASK
from roam_core.secretscan.scan import Finding, Scanner, fingerprint


@dataclass(frozen=True)
class Redacted:
    """What travels instead of a memory file, and the warnings that say so."""

    content: bytes
    notes: list[str]


def redact_memory(scanner: Scanner, rel: str, data: bytes,
                  findings: list[Finding]) -> Redacted | None:
    """The memory file `rel` with every entry's secrets masked, or None to stop the push.

    None when `rel` is not a memory file, is not an entry list, or when a finding of
    `findings` (the push scanner's, allowed ones already left out) lies in no entry.
    """
    if not findings or not is_memory_file(rel):
        return None
    entries = parse_entries(data)
    if entries is None:
        return None
    wanted = {finding.fingerprint for finding in findings}
    kept: list[str] = []
    notes: list[str] = []
    for number, entry in enumerate(entries, 1):
        raw = entry.encode("utf-8")
        spans = sorted((start, end) for (start, end), (rule, secret)
                       in scanner.byte_spans(raw).items()
                       if fingerprint(rel, rule, secret) in wanted)
        if not spans:
            kept.append(entry)
            continue
        parts, last = [], 0
        for start, end in spans:
            start = max(start, last)
            parts.append(raw[last:start])
            parts.append(MASK.encode())
            last = max(last, end)
        parts.append(raw[last:])
        copy = b"".join(parts).decode("utf-8", "replace")
        kept.append(copy)
        first = copy.splitlines()[0] if copy else ""
        notes.append(f"warning: {rel}: entry {number} (\"{first[:60]}\") pushed as a redacted "
                     "copy; this device keeps the original (redact_memories)")
    redacted = render_entries(kept)
    if not notes or scanner.scan_bytes(rel, redacted):
        return None  # a finding outside every entry, or one the masking did not remove
    return Redacted(redacted, notes)
