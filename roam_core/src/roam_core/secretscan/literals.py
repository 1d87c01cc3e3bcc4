"""The literal secrets of this machine: `.env` values and roam's own secrets, for matching only.

Read by roam itself from disk (the root home's `.env` and the active profile's `.env`) and
from the process's secret lookup, never through Hermes's secret scope alone: a profile
process's scope does not hold the root's values, and that is how the root's archive key once
reached Discord from a profile turn. The values stay in this process's memory; nothing here
logs, writes or returns them except to the masking and scanning code.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable
from pathlib import Path

from roam_core.errors import RoamError
from roam_core.secretscan.rules import entropy

#: roam's own secrets (and its plugins'), always masked whatever their shape.
#: (A plugin's secret of another name is caught by its secret-looking name.)
ROAM_SECRETS = ("ROAM_ARCHIVE_KEY", "ROAM_DISCORD_BOT_TOKEN", "ROAM_S3_SECRET_ACCESS_KEY",
                "ROAM_S3_SESSION_TOKEN")
#: Shorter values than this are never literal secrets: they would mask ordinary words.
MIN_SECRET = 6
#: With `redact_env_values` on, every `.env` value at least this long is masked.
MIN_ANY_VALUE = 8


class LiteralsUnavailable(RoamError):
    """The literal-secret set could not be built (a `.env` that exists cannot be read)."""


def env_files(root: Path, profile: str = "default") -> list[Path]:
    """The `.env` files whose values are secrets for a process of `profile`."""
    files = [root / ".env"]
    if profile and profile not in ("default", "custom"):
        files.append(root / "profiles" / profile / ".env")
    return files


def _secret_named(name: str) -> bool:
    from roam_core.config.sensitive import is_secret_key

    return name in ROAM_SECRETS or is_secret_key(name)


def secret_like(value: str) -> bool:
    """Long and random enough to be a secret whatever its name (not `local`, not a path)."""
    if len(value) < 12 or value.startswith(("/", "~", "./")):
        return False
    return entropy(value) >= 3.0 and not re.fullmatch(r"[a-z]+(?:[ _.-][a-z]+)*", value)


def _any_value(value: str) -> bool:
    lowered = value.lower()
    return len(value) >= MIN_ANY_VALUE and not value.isdigit() \
        and lowered not in ("true", "false", "yes", "no", "none", "null")


def keep(name: str, value: str, all_values: bool) -> bool:
    """Whether the value of `.env` entry `name` is a literal secret."""
    value = value.strip()
    if len(value) < MIN_SECRET:
        return False
    if _secret_named(name) or secret_like(value):
        return True
    return all_values and _any_value(value)


def variants(value: str) -> Iterable[str]:
    """The secret plus the other common spellings of the same key bytes (hex, base64)."""
    yield value
    raw: bytes | None = None
    if re.fullmatch(r"(?:[0-9a-fA-F]{2}){16,}", value):
        raw = bytes.fromhex(value)
    elif len(value) >= 20:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw and len(raw) >= 16:
        yield raw.hex()
        yield base64.b64encode(raw).decode()
        yield base64.urlsafe_b64encode(raw).decode()


def literal_secrets(root: Path | None, profile: str = "default", *,
                    all_env_values: bool = True) -> list[str]:
    """Every literal secret to mask or look for, longest first.

    Raises:
        LiteralsUnavailable: when a `.env` file exists but cannot be read; callers fail
            closed (the mirror holds the turn, the push scanner stops the push).
    """
    from roam_core.secrets import dotenv_values, get_secret

    found: set[str] = set()
    if root is not None:
        for path in env_files(root, profile):
            try:
                values = dotenv_values(path)
            except OSError as error:
                raise LiteralsUnavailable(
                    f"cannot read {path} to mask its values: {error.strerror or error}"
                ) from None
            found.update(v.strip() for k, v in values.items() if keep(k, v, all_env_values))
    for name, value in os.environ.items():
        if _secret_named(name) and len(value.strip()) >= MIN_SECRET:
            found.add(value.strip())
    for name in ROAM_SECRETS:
        try:
            known = get_secret(name, root)
        except Exception:  # an unscoped Hermes read: the disk copy above counts
            known = None
        if known and len(known.strip()) >= MIN_SECRET:
            found.add(known.strip())
    spelled = {variant for value in found for variant in variants(value) if variant}
    return sorted(spelled, key=len, reverse=True)
