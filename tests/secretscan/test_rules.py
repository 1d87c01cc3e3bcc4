"""The shared rule table: every row catches its example, ordinary text passes untouched."""

from __future__ import annotations

import base64
import hashlib
import uuid
from pathlib import Path

import pytest

from roam_core.secretscan.mask import mask_text
from roam_core.secretscan.rules import RULES, Rule

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _secret_of(rule: Rule) -> str:
    spans = list(rule.secrets(rule.example))
    assert spans, f"{rule.name} does not catch its own example {rule.example!r}"
    start, end = spans[0]
    return rule.example[start:end]


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_every_rule_catches_its_example_and_the_mask_removes_it(rule: Rule) -> None:
    secret = _secret_of(rule)
    assert len(secret) >= 4
    masked = mask_text(f"before {rule.example} after")
    assert secret not in masked and "[REDACTED" in masked
    assert masked.startswith("before ")


@pytest.mark.parametrize("rule", [r for r in RULES if not r.mirror_only],
                         ids=[r.name for r in RULES if not r.mirror_only])
def test_every_push_rule_catches_its_example_strictly(rule: Rule) -> None:
    assert list(rule.secrets(rule.example, strict=True)), rule.name


def test_every_rule_has_a_row_in_the_security_doc() -> None:
    text = (DOCS / "security.md").read_text()
    for rule in RULES:
        assert f"| `{rule.name}` |" in text, rule.name


HARMLESS = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    f"sha256 {hashlib.sha256(b'x').hexdigest()}",
    f"id {uuid.UUID(int=0x1234567890abcdef1234567890abcdef)}",
    "![img](data:image/png;base64," + base64.b64encode(bytes(range(256)) * 8).decode() + ")",
    "AWS docs use AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Use max_tokens=4096 and token_count: 1234567 in the request",
    "export OPENAI_API_KEY=${OPENAI_API_KEY}",
    "api_key: <your-api-key>",
    "password: required",
    "token = os.environ['GITHUB_TOKEN']",
    "see https://example.org/docs?page=2&lang=en and git@github.com:org/repo.git",
    "The model anthropic/claude-sonnet-4-20250514 answered in 2.3 s.",
    "class VeryLongIdentifierNameForTesting(BaseModelWithExtras):",
    "def resolve_access_key_from_environment_variables():",
    "wait...what happened there",
    "path /home/me/projects/roam/src/roam_core/secretscan/rules.py",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_ordinary_text_has_no_push_findings(text: str) -> None:
    found = [rule.name for rule in RULES if not rule.mirror_only
             for _span in rule.secrets(text, strict=True)]
    assert not found, (found, text)


def test_ordinary_prose_is_not_masked_by_the_mirror() -> None:
    text = "Use max_tokens=4096; the commit 3f786850e387550fdab836ed7e6dc881de23001b; wait...what"
    assert mask_text(text) == text


@pytest.mark.parametrize("rule", [r for r in RULES if r.local], ids=[r.name for r in RULES
                                                                     if r.local])
def test_rules_run_over_long_runs_find_what_a_full_scan_finds(rule: Rule) -> None:
    from dataclasses import replace

    text = f"x\t{rule.example}\n({rule.example}) `{rule.example}`, short words {rule.example}"
    assert list(rule.secrets(text)) == list(replace(rule, local=False).secrets(text))
    assert list(rule.secrets(text))
