"""Turning a turn into Discord messages and a thread name, within Discord's limits.

Lengths are counted in UTF-16 code units, which is never less than Discord's own count, so
a part that fits here fits there. Text is split on paragraph boundaries first, then lines,
then words, and only a single over-long word is cut, never inside a character or between
a character and the combining marks that follow it. A code fence open at a cut is closed
and reopened so each part renders on its own.
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from collections.abc import Iterator

from roam_core.plugin import TurnEvent

MESSAGE_LIMIT = 2000
NAME_LIMIT = 100
_FENCE_ROOM = 32
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_NAME_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_FENCE = re.compile(r"^\s*(```+|~~~+)([^\s`]*)", re.M)


def units(text: str) -> int:
    """Length in UTF-16 code units (what a JavaScript client would count)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _joins_previous(char: str) -> bool:
    """Whether `char` belongs to the character before it (marks, joiners, selectors)."""
    return bool(unicodedata.combining(char)) or char in "\u200d\ufe0e\ufe0f" or \
        "\U0001f3fb" <= char <= "\U0001f3ff"


def _hard_split(word: str, budget: int) -> Iterator[str]:
    while units(word) > budget:
        cut, used = 0, 0
        for index, char in enumerate(word):
            size = 2 if ord(char) > 0xFFFF else 1
            if used + size > budget:
                break
            used += size
            cut = index + 1
        cut = max(cut, 1)
        while cut > 1 and cut < len(word) and (_joins_previous(word[cut])
                                              or word[cut - 1] == "\u200d"):
            cut -= 1
        yield word[:cut]
        word = word[cut:]
    if word:
        yield word


def _pieces(text: str, budget: int) -> Iterator[str]:
    for paragraph in re.split(r"(?<=\n\n)", text):
        if units(paragraph) <= budget:
            yield paragraph
            continue
        for line in re.split(r"(?<=\n)", paragraph):
            if units(line) <= budget:
                yield line
                continue
            for word in re.split(r"(?<=\s)", line):
                yield from _hard_split(word, budget)


def _balance_fences(chunks: list[str]) -> list[str]:
    out: list[str] = []
    opener = ""
    for chunk in chunks:
        body = f"{opener}\n{chunk}" if opener else chunk
        for match in _FENCE.finditer(chunk):
            opener = "" if opener else (match.group(1) + match.group(2))[:16]
        if opener:
            body += "\n" + re.match(r"`+|~+", opener).group(0)  # type: ignore[union-attr]
        out.append(body)
    return out


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Cut `text` into non-empty parts of at most `limit` units, on the nicest boundaries."""
    text = _CONTROL.sub("", text).strip("\n")
    if not text.strip():
        return []
    if units(text) <= limit:
        return [text]
    fenced = bool(_FENCE.search(text))
    budget = limit - _FENCE_ROOM if fenced else limit
    chunks: list[str] = []
    current = ""
    for piece in _pieces(text, budget):
        if current and units(current + piece) > budget:
            chunks.append(current)
            current = ""
        current += piece
    if current:
        chunks.append(current)
    chunks = [chunk.strip("\n").rstrip() for chunk in chunks]
    chunks = [chunk for chunk in chunks if chunk.strip()]
    return _balance_fences(chunks) if fenced else chunks


def _closed(text: str) -> str:
    """`text` with a code fence it leaves open closed, so what follows renders as text.

    Discord opens a code block at any ``` (not only at a line start), so they are counted.
    """
    return f"{text}\n```" if text.count("```") % 2 else text


def footer_line(event: TurnEvent) -> str:
    """Discord subtext naming the model, the profile and the turn's time (UTC)."""
    when = datetime.datetime.fromtimestamp(event.time, datetime.UTC).strftime(
        "%Y-%m-%d %H:%M UTC")
    parts = [_one_line(event.model), _one_line(event.profile or "default"), when]
    return "-# " + " · ".join(part for part in parts if part)


def format_turn(event: TurnEvent, footer: bool = False) -> str:
    """One turn as Discord markdown: the user's message, then the reply (then a footer)."""
    user = _closed(event.user_message.strip()) or "(no text)"
    reply = _closed(event.reply.strip()) or "(no reply)"
    text = f"**You**\n{user}\n\n**Hermes**\n{reply}"
    return f"{text}\n{footer_line(event)}" if footer else text


def _one_line(text: str) -> str:
    return " ".join(_NAME_UNSAFE.sub(" ", text).split())


def session_label(event: TurnEvent) -> str:
    """What names a session's thread: its title, else its first message, else its id.

    Profiles other than the default are shown in brackets first.
    """
    base = _one_line(event.title)
    if not base:
        first = next((line for line in event.user_message.splitlines() if line.strip()), "")
        base = _one_line(first)
    if not base:
        base = f"Hermes session {event.session_id}"
    if event.profile and event.profile != "default":
        base = f"[{_one_line(event.profile)}] {base}"
    return base


def compose_name(label: str, tag: str = "", continued: bool = False) -> str:
    """A thread name of 1–100 units: `label`, " (continued)" if so, then " · tag".

    The tag and the continuation mark are always kept; the label is cut with "…".
    """
    suffix = (" (continued)" if continued else "") + (f" · {tag}" if tag else "")
    limit = NAME_LIMIT - units(suffix)
    base = _one_line(label)
    if units(base) > limit:
        base = next(_hard_split(base, limit - 1)).rstrip() + "…"
    return (base or "Hermes session") + suffix


def thread_name(event: TurnEvent, tag: str = "") -> str:
    """A thread name from the session's title (else its first message), 1–100 units.

    `tag` (a short id derived from the session) is appended after " · " and always kept:
    it makes the name unique per session, so a restarted sender can recognise the thread
    it created before a crash by name alone.
    """
    return compose_name(session_label(event), tag)
