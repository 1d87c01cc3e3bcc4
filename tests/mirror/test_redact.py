from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from roam_core.mirror import redact
from roam_core.mirror.events import make_live_event
from roam_core.mirror.redact import RedactionUnavailable, redact_event, redact_text

DISCORD_TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.abcdefghijklmnopqrstuvwxyz0123456789AB"
SAMPLES = {
    "discord": f"my token is {DISCORD_TOKEN} ok",
    "openai": "key sk-proj-abcdefghijklmnopqrstuvwxyz123456 here",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "aws-id": "AKIAIOSFODNN7EXAMPLE is the id",
    "aws-secret": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "assignment": "DISCORD_BOT_TOKEN=supersecretvalue123",
}
LEAKS = {
    "discord": DISCORD_TOKEN,
    "openai": "abcdefghijklmnopqrstuvwxyz123456",
    "anthropic": "api03-abcdefghijklmnopqrstuvwxyz",
    "aws-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "abcdefghijklmnopqrstuvwxyz012345",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "assignment": "supersecretvalue123",
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_roam_patterns_mask_tokens(kind: str) -> None:
    cleaned = redact_text(SAMPLES[kind])
    assert LEAKS[kind] not in cleaned
    assert "[REDACTED" in cleaned


def test_private_key_blocks_are_masked_even_when_cut_off() -> None:
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n" \
            "-----END OPENSSH PRIVATE KEY-----"
    assert "b3BlbnNz" not in redact_text(f"before\n{block}\nafter")
    assert "after" in redact_text(f"before\n{block}\nafter")
    assert "b3BlbnNz" not in redact_text("x -----BEGIN RSA PRIVATE KEY-----\nb3BlbnNz...")


def test_ordinary_text_is_untouched() -> None:
    text = "Use max_tokens=4096 and the bot configuration_management module; sk-8 is short."
    assert redact_text(text) == text


def test_archive_key_value_is_masked_in_every_spelling(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    raw = os.urandom(32)
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", base64.b64encode(raw).decode())
    event = make_live_event(session_id="s", turn_id="1",
                            user_message=f"b64 {base64.b64encode(raw).decode()}",
                            reply=f"hex {raw.hex()} url {base64.urlsafe_b64encode(raw).decode()}")
    cleaned = redact_event(event, tmp_path)
    for spelling in (raw.hex(), base64.b64encode(raw).decode(),
                     base64.urlsafe_b64encode(raw).decode()):
        assert spelling not in cleaned.user_message + cleaned.reply
    assert cleaned.redacted


def test_the_hermes_layer_runs_first() -> None:
    cleaned = redact_text("value HERMES-ONLY-SECRET end")
    assert cleaned == "value [hermes-redacted] end"


def test_missing_hermes_redactor_fails_closed() -> None:
    redact.set_hermes_redactor(None)
    with pytest.raises(RedactionUnavailable):
        redact_text("anything")


def test_raising_hermes_redactor_fails_closed() -> None:
    def broken(text: str) -> str:
        raise ValueError("boom sk-should-not-appear")

    redact.set_hermes_redactor(broken)
    with pytest.raises(RedactionUnavailable) as caught:
        redact_text("anything")
    assert "sk-should" not in str(caught.value)


def test_hermes_reporting_failure_fails_closed() -> None:
    redact.set_hermes_redactor(lambda text: redact.HERMES_FAILED)
    with pytest.raises(RedactionUnavailable):
        redact_text("anything")


def test_auto_detection_without_hermes_is_unavailable() -> None:
    redact.set_hermes_redactor(None, explicit=False)
    try:
        import agent.redact  # noqa: F401
    except ImportError:
        assert redact.hermes_redactor() is None
    else:  # pragma: no cover - Hermes installed in this environment
        assert redact.hermes_redactor() is not None


# Issue 20 item 6: what reached Discord in clear.
GAPS = {
    "discord-webhook": ("see https://discord.com/api/webhooks/123456789012345678/"
                        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEf now",
                        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEf"),
    "https-userinfo": ("open https://admin:pw@host.internal/x", "admin:pw@"),
    "redis-userinfo": ("cache redis://:s3cretpw@cache:6379/0", "s3cretpw"),
    "bare-aws-secret": ("the other one is kS8vT2xQ9pLm4NzR7wYb3HcF6jD1gA5eU0iOqW2r ok",
                        "kS8vT2xQ9pLm4NzR7wYb3HcF6jD1gA5eU0iOqW2r"),
    "word-then-token": ("my api key is Zx81kPq2Lm0vRt7YwE3sNc thanks", "Zx81kPq2Lm0vRt7YwE3sNc"),
    "query-secret": ("GET /v1/weather?q=x&api_key=Qm9vZ3lfa2V5XzEy", "Qm9vZ3lfa2V5XzEy"),
}


@pytest.mark.parametrize("kind", sorted(GAPS))
def test_redaction_gaps_are_closed(kind: str) -> None:
    text, leak = GAPS[kind]
    assert leak not in redact_text(text)


def hermes_partial(text: str) -> str:
    """Hermes 0.19's own masks keep the first 6 and last 4 characters of what they know."""
    import re

    return re.sub(r"\b(AKIA[A-Z0-9]{2})[A-Z0-9]{10}([A-Z0-9]{4})\b", r"\1...\2", text)


def test_hermes_partial_masks_never_leave_remnants() -> None:
    redact.set_hermes_redactor(hermes_partial)
    cleaned = redact_text("id AKIAQOFAKE0123456789 and AKIAZZ...WXYZ, wait...what")
    assert "AKIAQO" not in cleaned and "6789" not in cleaned
    assert "AKIAZZ" not in cleaned  # a remnant of an earlier Hermes pass, too
    assert "wait...what" in cleaned


def _profile(root: Path, env: str, profile_env: str = "") -> None:
    (root / ".env").write_text(env)
    (root / "profiles" / "work").mkdir(parents=True)
    (root / "profiles" / "work" / ".env").write_text(profile_env)


def test_env_values_of_root_and_profile_are_masked_whatever_their_shape(root: Path) -> None:
    _profile(root, "ROAM_ARCHIVE_KEY=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5\n"
                   "TERMINAL_ENV=local\nMY_THING=plain words here\n",
             "WEATHER=qZ7vN2pLx9Rt4WmK8sHd\nSHORT=abc\n")
    event = make_live_event(session_id="s", turn_id="1", profile="work",
                            user_message="Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5 local",
                            reply="qZ7vN2pLx9Rt4WmK8sHd plain words here abc")
    cleaned = redact_event(event, root)
    text = cleaned.user_message + cleaned.reply
    for leak in ("Zm9vYmFy", "qZ7vN2pLx9Rt4WmK8sHd", "plain words here"):
        assert leak not in text
    assert "local" in text and "abc" in text


def test_redact_env_values_off_keeps_ordinary_values(root: Path) -> None:
    from .conftest import write_settings

    write_settings(root, redact_env_values=False)
    (root / ".env").write_text("MY_THING=plain words here\nOTHER=qZ7vN2pLx9Rt4WmK8sHd\n")
    event = make_live_event(session_id="s", turn_id="1", user_message="plain words here",
                            reply="qZ7vN2pLx9Rt4WmK8sHd")
    cleaned = redact_event(event, root)
    assert cleaned.user_message == "plain words here"
    assert "qZ7vN2pLx9Rt4WmK8sHd" not in cleaned.reply  # random enough: always masked


def test_user_patterns_are_masked_and_bad_ones_hold_the_turn(root: Path) -> None:
    from .conftest import write_settings

    write_settings(root, redact_patterns=[r"ticket-(?P<secret>\d{6})"])
    event = make_live_event(session_id="s", turn_id="1", user_message="ticket-123456",
                            reply="ok")
    assert redact_event(event, root).user_message == "ticket-[REDACTED]"
    write_settings(root, redact_patterns=["(unclosed"])
    with pytest.raises(RedactionUnavailable, match="redact_patterns"):
        redact_event(event, root)


def test_unreadable_env_fails_closed(root: Path) -> None:
    (root / ".env").mkdir()  # exists, cannot be read as a file
    event = make_live_event(session_id="s", turn_id="1", user_message="hi", reply="there")
    with pytest.raises(RedactionUnavailable, match=r"\.env"):
        redact_event(event, root)


def test_last_look_masks_a_literal_in_an_event_already_marked_redacted(root: Path) -> None:
    (root / ".env").write_text("ROAM_DISCORD_BOT_TOKEN=tok-qZ7vN2pLx9Rt4Wm\n")
    event = make_live_event(session_id="s", turn_id="1", user_message="tok-qZ7vN2pLx9Rt4Wm",
                            reply="fine").with_text(redacted=True)
    assert "tok-qZ7" not in redact.last_look(event, root).user_message
