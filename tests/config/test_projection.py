"""What of config.yaml travels: host keys, secrets, credential values and home paths stay."""

from __future__ import annotations

import pytest
import yaml

from roam_core.config import shared_projection
from roam_core.config.sensitive import has_home_path, is_secret_key, looks_like_credential
from roam_core.errors import ConfigError

CONFIG = """\
# my config; the key is sk-commentsecret000000000000
_config_version: 33
model:
  default: anthropic/claude-sonnet-4
  provider: openrouter
  base_url: https://openrouter.ai/api/v1
  api_key: sk-or-v1-abcdefabcdefabcdefabcdef
  context_length: 200000
providers:
  mine:
    apiKey: plain-looking-but-named-secret
    token: t
    max_tokens: 4096
    endpoint: http://localhost:8080/v1
terminal:
  backend: local
  cwd: /srv/work
paths:
  notes: /data/notes
display:
  skin: mono
  interface: tui
  personality: concise
browser:
  executable: /usr/bin/chromium
  headless: true
mcp_servers:
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env:
      LOG_LEVEL: info
    cwd: /srv
    timeout: 30
plugins:
  entries:
    roam:
      settings: {backend: s3, bucket: mine}
    other:
      enabled: true
prefill_messages_file: /home/alice/prefill.json
skills:
  external_dirs: [/home/alice/skills, ~/shared-skills]
security:
  redact_secrets: true
credential_pool_strategies: {openrouter: round_robin}
custom_providers:
- name: local
  base_url: http://127.0.0.1:1234
- name: cloud
  api_key: abc
discord:
  webhook_url: https://discord.com/api/webhooks/1/abc
  channel: general
fallback_model: gpt-4o-mini
toolsets:
- hermes-cli
- web
odd:
  win: C:\\Users\\bob\\x
  mac: /Users/bob/x
  root: /root/.hermes
  url: https://bob:hunter2@example.com/x
  github: ghp_abcdefghijklmnopqrstuvwxyz0123
  jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig
  aws: AKIAABCDEFGHIJKLMNOP
  pem: "-----BEGIN OPENSSH PRIVATE KEY-----\\nabc"
  fine: just text
"""


def projected(text: str = CONFIG, **kw: object) -> dict:
    return yaml.safe_load(shared_projection(text, **kw))  # type: ignore[arg-type]


def test_projection_keeps_what_may_travel_and_strips_the_rest() -> None:
    data = projected()
    assert data == {
        "_config_version": 33,
        "model": {"default": "anthropic/claude-sonnet-4", "provider": "openrouter",
                  "base_url": "https://openrouter.ai/api/v1", "context_length": 200000},
        "providers": {"mine": {"max_tokens": 4096, "endpoint": "http://localhost:8080/v1"}},
        "display": {"skin": "mono", "personality": "concise"},
        "browser": {"headless": True},
        "mcp_servers": {"github": {"args": ["-y", "@modelcontextprotocol/server-github"],
                                   "timeout": 30}},
        "plugins": {"entries": {"other": {"enabled": True}}},
        "security": {"redact_secrets": True},
        "credential_pool_strategies": {"openrouter": "round_robin"},
        "discord": {"channel": "general"},
        "fallback_model": "gpt-4o-mini",
        "toolsets": ["hermes-cli", "web"],
        "odd": {"fine": "just text"},
    }


def test_no_secret_survives_in_the_text() -> None:
    text = shared_projection(CONFIG)
    for needle in ("sk-", "commentsecret", "plain-looking", "/home/alice", "/Users/bob",
                   "C:\\", "/root", "hunter2", "ghp_", "eyJ", "AKIA", "PRIVATE KEY",
                   "webhooks", "/srv", "chromium", "npx", "bucket", "tui", "/data/notes"):
        assert needle not in text, needle


def test_device_host_keys_are_stripped_too() -> None:
    data = projected(host_keys=("display.skin", "mcp_servers.*.args", "odd"))
    assert data["display"] == {"personality": "concise"}
    assert data["mcp_servers"] == {"github": {"timeout": 30}}
    assert "odd" not in data


def test_projection_is_deterministic_and_idempotent() -> None:
    once = shared_projection(CONFIG)
    assert shared_projection(CONFIG) == once
    assert shared_projection(once) == once


def test_empty_and_comment_only_configs() -> None:
    assert shared_projection("") == "{}\n"
    assert shared_projection("# nothing\n") == "{}\n"


def test_yaml_1_1_meaning_is_kept() -> None:
    """Hermes reads config with PyYAML: `yes` is true and `0777` is 511 there and here."""
    assert projected("a: yes\nb: 0777\nc: on\nd: '0777'\n") == {"a": True, "b": 511, "c": True,
                                                               "d": "0777"}


@pytest.mark.parametrize(("text", "message"), [
    ("model: [a\nb: 1\n", "profiles/w/config.yaml:2: "),
    ("a: 1\na: 2\n", "profiles/w/config.yaml:2: duplicate key 'a'"),
    ("- a\n- b\n", "profiles/w/config.yaml:1: expected a mapping"),
    ("a: !!python/object:os.system x\n", "profiles/w/config.yaml:1: "),
    ("a:\n\tb: 1\n", "profiles/w/config.yaml:2: "),
])
def test_malformed_yaml_names_file_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        shared_projection(text, source="profiles/w/config.yaml")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("name", "secret"), [
    ("api_key", True), ("apiKey", True), ("OPENAI_API_KEY", True), ("token", True),
    ("bot_token", True), ("access_token", True), ("password", True), ("client_secret", True),
    ("key", True), ("private_key", True), ("aws_access_key_id", True), ("webhook_url", True),
    ("Authorization", True), ("cookie", True), ("dsn", True),
    ("ROAM_ARCHIVE_KEY", True), ("archive_key", True), ("auto_archive", False),
    ("max_tokens", False), ("redact_secrets", False), ("credential_pool_strategies", False),
    ("hotkey", False), ("keybindings", False), ("skin", False), ("base_url", False),
    ("context_length", False), ("token_budget", False),
])
def test_secret_key_names(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


@pytest.mark.parametrize(("value", "credential"), [
    ("sk-abcdefghijklmnop1234", True), ("sk-ant-api03-abcdefghijklmnop", True),
    ("xoxb-1234567890-abcdef", True), ("glpat-abcdefghijklmnopqrst", True),
    ("hf_abcdefghijklmnopqrstuvwxyz", True), ("Bearer abcdefghijklmnop", True),
    ("ABCdef1234567890ABCdef1234567890xyz", True),
    ("gpt-4o", False), ("anthropic/claude-3.5-sonnet", False),
    ("123e4567-e89b-12d3-a456-426614174000", False), ("d41d8cd98f00b204e9800998ecf8427e", False),
    ("http://localhost:8080/v1", False), ("a sentence with words", False),
])
def test_credential_values(value: str, credential: bool) -> None:
    assert looks_like_credential(value) is credential


@pytest.mark.parametrize(("value", "home"), [
    ("/home/alice/x", True), ("python /home/alice/x.py", True), ("/var/home/bob", True),
    ("/root", True), ("/root/.hermes", True), ("/Users/bob/a", True),
    ("C:\\Users\\bob\\x", True), ("c:/Users/bob", True),
    ("~/x", False), ("/rootfs/x", False), ("/opt/homebrew/bin/node", False), ("/srv/x", False),
    ("$HOME/x", False),
])
def test_home_paths(value: str, home: bool) -> None:
    assert has_home_path(value) is home


# Issue 26: secrets the key names do not give away, found by position.
POSITIONAL = """\
mcp_servers:
  gh:
    command: gh-mcp
    args: ["--token", "Zx81kPq2Lm0vRt7YwE3sNc", "--verbose"]
  db:
    command: db-mcp
    args: ["--password=hunter2hunter2", "--port", "5432"]
  weather:
    url: https://api.example.org/v1?city=x&api_key=Qm9vZ3lfa2V5XzEy
  plain:
    command: plain-mcp
    args: ["--port", "8080", "--name", "fine"]
backup:
  pwd: short1
  pass: hunter22
  passphrase: correct horse battery staple
"""


def test_secrets_by_position_are_stripped() -> None:
    text = shared_projection(POSITIONAL)
    for secret in ("Zx81kPq2Lm0vRt7YwE3sNc", "hunter2hunter2", "Qm9vZ3lfa2V5XzEy", "short1",
                   "hunter22", "correct horse"):
        assert secret not in text, secret
    kept = yaml.safe_load(text)
    assert kept["mcp_servers"]["plain"]["args"] == ["--port", "8080", "--name", "fine"]
    assert "args" not in kept["mcp_servers"].get("gh", {})
