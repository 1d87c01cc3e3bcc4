"""Fail-closed redaction of turn events before anything leaves the machine.

Two layers, both required: Hermes's own egress redaction (`agent.redact.redact_for_egress`
where it exists, `redact_sensitive_text(text, force=True)` on Hermes 0.19) and roam's own
masks: the literal secrets of the root's and the profile's `.env` and roam's secrets, read
from disk (roam_core.secretscan.literals), and the shared rule table
(roam_core.secretscan.rules) plus the user's `redact_patterns`. If the literal secrets
cannot be read, or if the Hermes layer cannot be imported, raises, or reports that it could
not redact, `RedactionUnavailable` is raised and the caller keeps the event spooled, unsent.
The Hermes layer is pluggable (`set_hermes_redactor`) so tests can inject a fake.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from roam_core.errors import RoamError
from roam_core.mirror.events import TurnEvent
from roam_core.secretscan import literals
from roam_core.secretscan.mask import MASK, mask_literals, mask_text
from roam_core.secretscan.rules import Rule, user_rules

log = logging.getLogger(__name__)

Redactor = Callable[[str], str]

#: What Hermes's `redact_for_egress` returns when its own redactor failed.
HERMES_FAILED = "[redaction-unavailable]"
__all__ = ["MASK", "RedactionUnavailable", "last_look", "literal_secrets", "redact_event",
           "redact_text"]


class RedactionUnavailable(RoamError):
    """The egress redaction could not run; nothing may be sent."""


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
        from agent.redact import redact_for_egress
    except ImportError:
        pass
    else:
        return redact_for_egress
    try:
        from agent.redact import redact_sensitive_text
    except ImportError:
        return None
    return lambda text: redact_sensitive_text(text, force=True)


def hermes_redactor() -> Redactor | None:
    """The Hermes layer in force, or None when it is unavailable."""
    with _lock:
        if _override_set:
            return _override
    return _detect_hermes()


def _settings(root: Path | None) -> tuple[bool, tuple[Rule, ...]]:
    """(`redact_env_values`, the `redact_patterns` rules) of `root`'s settings."""
    from roam_core.mirror.config import settings_for
    from roam_core.settings import CoreSettings

    if root is None:
        return True, ()
    try:
        core = CoreSettings.build(settings_for(root))
        return core.redact_env_values, user_rules(core.redact_patterns)
    except RoamError as error:  # a bad pattern must not let a secret out: hold the turn
        raise RedactionUnavailable(f"roam's redaction settings are unusable: {error}") from None


def literal_secrets(root: Path | None, profile: str = "default") -> list[str]:
    """The literal secrets of `root` and `profile` (their `.env` files, roam's own secrets).

    Raises:
        RedactionUnavailable: when they cannot be read (the turn is held, never sent).
    """
    all_values, _extra = _settings(root)
    try:
        return literals.literal_secrets(root, profile, all_env_values=all_values)
    except literals.LiteralsUnavailable as error:
        raise RedactionUnavailable(str(error)) from None


def roam_patterns(text: str, literals: Iterable[str] = (), extra: Iterable[Rule] = ()) -> str:
    """Roam's own masks: the literal secrets, then every rule of roam_core.secretscan."""
    return mask_text(text, literals, extra)


def redact_text(text: str, literals: Iterable[str] = (), extra: Iterable[Rule] = ()) -> str:
    """Roam's full masks, Hermes's layer, then roam's again; fail-closed on the Hermes layer.

    roam goes first so Hermes's partial masks (`sk-pro...abcd`, which keep 6 + 4
    characters) never get to reshape a secret roam would have masked whole; the second pass
    masks what Hermes alone recognised and left partly visible.
    """
    hermes = hermes_redactor()
    if hermes is None:
        raise RedactionUnavailable("Hermes's redaction (agent.redact) is not importable")
    literals = tuple(literals)
    extra = tuple(extra)
    masked = roam_patterns(text, literals, extra)
    try:
        cleaned = hermes(masked)
    except Exception as error:
        raise RedactionUnavailable(
            f"Hermes's redaction raised {type(error).__name__}") from None
    if not isinstance(cleaned, str) or (cleaned == HERMES_FAILED and masked != HERMES_FAILED):
        raise RedactionUnavailable("Hermes's redaction reported it could not redact")
    return cleaned if cleaned == masked else roam_patterns(cleaned, literals, extra)


def redact_event(event: TurnEvent, root: Path | None = None) -> TurnEvent:
    """The event with every text field redacted, marked `redacted=True`."""
    if event.redacted:
        return event
    _all, extra = _settings(root)
    found = literal_secrets(root, event.profile)
    return event.with_text(
        user_message=redact_text(event.user_message, found, extra),
        reply=redact_text(event.reply, found, extra),
        title=redact_text(event.title, found, extra) if event.title else "",
        redacted=True,
    )


def last_look(event: TurnEvent, root: Path | None) -> TurnEvent:
    """Mask the literal secrets once more right before delivery (cheap, no Hermes needed).

    An event spooled by an older roam, or by a process that could not see every `.env`,
    may be marked redacted and still hold a literal secret; this catches it at the door.

    Raises:
        RedactionUnavailable: when the literal secrets cannot be read (the turn waits).
    """
    found = literal_secrets(root, event.profile)
    fields = {"user_message": event.user_message, "reply": event.reply, "title": event.title}
    masked = {name: mask_literals(value, found) for name, value in fields.items()}
    return event if masked == fields else event.with_text(**masked)
