"""What in a config must never leave the machine: secret-looking names and values, home paths.

These are heuristics tuned to fail safe: a key that only looks secret stays local (it is
kept from the local file on every pull), which costs a setting that does not sync; a secret
that slipped through would cost far more.
"""

from __future__ import annotations

import re

#: A key holding one of these words is secret-looking.
SECRET_WORDS = frozenset({
    "password", "passwd", "passphrase", "pwd", "pass", "passcode", "secret", "secrets", "token",
    "apikey", "credential",
    "credentials", "auth", "authorization", "oauth", "bearer", "cookie", "cookies", "webhook",
    "dsn", "privatekey", "accesskey", "secretkey", "jwt", "totp", "otp", "sessionid",
})
#: `key`/`keys` preceded by one of these (`api_key`, `access_key_id`, `private_key`...).
KEY_QUALIFIERS = frozenset({
    "api", "access", "private", "secret", "signing", "encryption", "master", "client", "app",
    "account", "service", "license", "auth", "ssh", "gpg", "pgp", "deploy", "bot", "admin",
    "archive",  # roam's own ROAM_ARCHIVE_KEY / archive_key
})
#: Words that make a secret-sounding name a policy about secrets, not a secret
#: (`redact_secrets`, `credential_pool_strategies`, `max_tokens` is plural anyway).
POLICY_WORDS = frozenset({
    "redact", "redaction", "max", "min", "limit", "limits", "count", "budget", "ttl",
    "timeout", "enabled", "enable", "disable", "disabled", "strategy", "strategies", "pool",
    "pools", "mode", "type", "expiry", "length", "size", "rotation", "scope", "scopes",
})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")

_CREDENTIAL_VALUES = re.compile(
    r"(?:"
    r"\bsk-[A-Za-z0-9_-]{12,}"                       # OpenAI, Anthropic (sk-ant-), OpenRouter
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"  # Stripe
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{16,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"              # Slack
    r"|\bAKIA[0-9A-Z]{16}\b|\bASIA[0-9A-Z]{16}\b"     # AWS access key ids
    r"|\bAIza[0-9A-Za-z_-]{30,}"                     # Google
    r"|\bhf_[A-Za-z0-9]{20,}"                        # Hugging Face
    r"|\b(?:gsk|xai|pplx|nvapi|r8|fw|tgp)[_-][A-Za-z0-9_-]{20,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"  # JWT
    r"|-----BEGIN[A-Z ]*PRIVATE KEY-----"
    r"|\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"  # Discord bot token
    r"|\b\d{8,10}:AA[A-Za-z0-9_-]{30,}"              # Telegram bot token
    r"|discord(?:app)?\.com/api/webhooks/"
    r"|hooks\.slack\.com/services/"
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{12,}"
    r"|[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@"      # credentials in a URL (any user)
    r"|[?&;][a-z0-9_-]*(?:api[_-]?key|apikey|token|secret|password|passwd|pwd|signature|sig"
    r"|auth)=[^&\s#]{6,}"                             # a query parameter named like a secret
    r")"
)
#: A long token-shaped string mixing upper case, lower case and digits (hashes, UUIDs and
#: model names do not: they are hex, lower case or hold dots and slashes).
_OPAQUE_TOKEN = re.compile(r"^[A-Za-z0-9_\-+/=]{32,}$")

_HOME_PATH = re.compile(
    r"(?<![\w.-])(?:"
    r"(?:/var)?/home/[^/\s\"']+"
    r"|/Users/[^/\s\"']+"
    r"|/root(?=[/\s\"']|$)"
    r"|[A-Za-z]:[\\/]+Users[\\/]+[^\\/\s\"']+"
    r")"
)


def key_words(name: str) -> list[str]:
    """The lower-case words of a key name (`apiKey` and `api-key` give `api`, `key`)."""
    return [word.lower() for word in _WORD_SPLIT.split(_CAMEL.sub("_", name)) if word]


def is_secret_key(name: object) -> bool:
    """Whether a mapping key's name looks like it holds a credential."""
    words = key_words(str(name))
    if not words:
        return False
    if any(word in POLICY_WORDS for word in words):
        return False
    if any(word in SECRET_WORDS for word in words):
        return True
    if words == ["key"]:
        return True
    return any(word in ("key", "keys") and index > 0 and words[index - 1] in KEY_QUALIFIERS
               for index, word in enumerate(words))


def looks_like_credential(value: str) -> bool:
    """Whether a string value looks like a token, key, private key or URL with a password."""
    if _CREDENTIAL_VALUES.search(value):
        return True
    stripped = value.strip()
    return bool(_OPAQUE_TOKEN.match(stripped)) and any(c.isupper() for c in stripped) \
        and any(c.islower() for c in stripped) and any(c.isdigit() for c in stripped)


def is_secret_flag(arg: object) -> bool:
    """A command-line flag whose value is a secret: `--token`, `--api-key`, `--password=…`."""
    if not isinstance(arg, str) or not arg.startswith("-"):
        return False
    name = arg.lstrip("-").split("=", 1)[0]
    return bool(name) and is_secret_key(name)


def secret_in_args(items: list[object]) -> bool:
    """Whether an argument list holds a secret flag with a value (`--token X`, `--token=X`)."""
    for index, item in enumerate(items):
        if is_secret_flag(item):
            flag = str(item)
            if ("=" in flag and flag.split("=", 1)[1]) or index + 1 < len(items):
                return True
    return False


def has_home_path(value: str) -> bool:
    """Whether a string holds an absolute path inside a user's home folder."""
    return bool(_HOME_PATH.search(value))


def is_sensitive_value(value: object) -> bool:
    """A scalar that must not travel: a credential-looking or home-path string."""
    return isinstance(value, str) and (looks_like_credential(value) or has_home_path(value))
