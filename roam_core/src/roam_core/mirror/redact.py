"""Fail-closed redaction of turn events before anything leaves the machine.

Two layers, both required: Hermes's own egress redaction (`agent.redact.redact_for_egress`
where it exists, `redact_sensitive_text(text, force=True)` on Hermes 0.19) and roam's token
patterns below. If the Hermes layer cannot be imported, raises, or reports that it could not
redact, `RedactionUnavailable` is raised and the caller keeps the event spooled, unsent.
The Hermes layer is pluggable (`set_hermes_redactor`) so tests can inject a fake.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from roam_core.errors import RoamError
from roam_core.mirror.events import TurnEvent

log = logging.getLogger(__name__)

Redactor = Callable[[str], str]

MASK = "[REDACTED]"
#: What Hermes's `redact_for_egress` returns when its own redactor failed.
HERMES_FAILED = "[redaction-unavailable]"
#: Secrets whose literal values are always masked, whatever they look like.
LITERAL_SECRETS = ("ROAM_ARCHIVE_KEY", "ROAM_DISCORD_BOT_TOKEN")


class RedactionUnavailable(RoamError):
    """The egress redaction could not run; nothing may be sent."""


_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, terminated or cut off.
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
                r"|.*\Z)", re.S), "[REDACTED PRIVATE KEY]"),
    # Discord bot tokens: base64 of the bot's user id (so M, N or O first), timestamp, HMAC.
    (re.compile(r"\b[MNO][A-Za-z\d_-]{22,27}\.[A-Za-z\d_-]{6,7}\.[A-Za-z\d_-]{27,40}\b"), MASK),
    # OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
    (re.compile(r"\bsk-[A-Za-z\d_-]{16,}"), MASK),
    # AWS access key ids and secret keys given in an assignment.
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z\d]{16}\b"), MASK),
    (re.compile(r"(?i)(aws_?secret_?access_?key|secret_?access_?key)(\W{1,4})[A-Za-z\d/+=]{40}"),
     r"\1\2" + MASK),
    # GitHub and Slack tokens.
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z\d]{30,}|github_pat_[A-Za-z\d_]{30,})"), MASK),
    (re.compile(r"\bxox[abpors]-[A-Za-z\d-]{10,}"), MASK),
    # Authorization headers.
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z\d._~+/-]{20,}=*"), r"\1\2" + MASK),
    # NAME=value for credential-looking names.
    (re.compile(r"(?i)\b([A-Z\d_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|ARCHIVE_KEY))"
                r"(\s*[=:]\s*['\"]?)[^\s'\"]{6,}"), r"\1\2" + MASK),
)

_lock = threading.Lock()
_override: Redactor | None = None
_override_set = False


def set_hermes_redactor(redactor: Redactor | None, *, explicit: bool = True) -> None:
    """Use `redactor` as the Hermes layer (tests); `explicit=False` restores auto-detection.

    `set_hermes_redactor(None)` marks the Hermes layer as unavailable (fail-closed path).
    """
    global _override, _override_set
    with _lock:
        _override = redactor
        _override_set = explicit


def _detect_hermes() -> Redactor | None:
    try:
        from agent.redact import redact_for_egress  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return redact_for_egress  # type: ignore[no-any-return]
    try:
        from agent.redact import redact_sensitive_text  # type: ignore[import-not-found]
    except ImportError:
        return None
    return lambda text: redact_sensitive_text(text, force=True)


def hermes_redactor() -> Redactor | None:
    """The Hermes layer in force, or None when it is unavailable."""
    with _lock:
        if _override_set:
            return _override
    return _detect_hermes()


def _variants(value: str) -> Iterable[str]:
    """The literal secret plus the other common spellings of the same key bytes."""
    yield value
    raw: bytes | None = None
    try:
        raw = bytes.fromhex(value) if re.fullmatch(r"[0-9a-fA-F]{32,}", value) else None
    except ValueError:
        raw = None
    if raw is None:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw and len(raw) >= 16:
        yield raw.hex()
        yield base64.b64encode(raw).decode()
        yield base64.urlsafe_b64encode(raw).decode()


def literal_secrets(root: Path | None) -> list[str]:
    """Values of roam's own secrets that must never be sent, in every usual spelling."""
    from roam_core.secrets import get_secret

    found: list[str] = []
    for name in LITERAL_SECRETS:
        try:
            value = get_secret(name, root)
        except Exception as error:  # an unscoped Hermes secret read: nothing to mask from here
            log.debug("roam mirror: %s is not readable here (%s)", name, type(error).__name__)
            continue
        if value and len(value.strip()) >= 8:
            found.extend(v for v in _variants(value.strip()) if v)
    return sorted(set(found), key=len, reverse=True)


def roam_patterns(text: str, literals: Iterable[str] = ()) -> str:
    """Apply roam's own patterns and literal secrets (always, after the Hermes layer)."""
    for literal in literals:
        text = text.replace(literal, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_text(text: str, literals: Iterable[str] = ()) -> str:
    """Both layers over one string; `RedactionUnavailable` when the Hermes layer is missing."""
    hermes = hermes_redactor()
    if hermes is None:
        raise RedactionUnavailable("Hermes's redaction (agent.redact) is not importable")
    try:
        cleaned = hermes(text)
    except Exception as error:
        raise RedactionUnavailable(
            f"Hermes's redaction raised {type(error).__name__}") from None
    if not isinstance(cleaned, str) or (cleaned == HERMES_FAILED and text != HERMES_FAILED):
        raise RedactionUnavailable("Hermes's redaction reported it could not redact")
    return roam_patterns(cleaned, literals)


def redact_event(event: TurnEvent, root: Path | None = None) -> TurnEvent:
    """The event with every text field redacted, marked `redacted=True`."""
    if event.redacted:
        return event
    literals = literal_secrets(root)
    return event.with_text(
        user_message=redact_text(event.user_message, literals),
        reply=redact_text(event.reply, literals),
        title=redact_text(event.title, literals) if event.title else "",
        redacted=True,
    )
