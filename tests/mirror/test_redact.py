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
