"""The s3 backend's settings, checked before boto3 is ever imported."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from roam_core.plugin import ConfigError, Setting

#: The settings the backend reads from `plugins.entries.roam.settings`.
SETTINGS: tuple[Setting, ...] = (
    Setting("s3_bucket", "the bucket that holds the store", required=True),
    Setting("s3_prefix", "folder inside the bucket for roam's objects", default="roam"),
    Setting("s3_endpoint_url", "endpoint for R2 or another S3 service "
            "(R2: https://<account>.r2.cloudflarestorage.com); empty for AWS"),
    Setting("s3_region", "region (R2: auto); empty for the usual AWS lookup"),
)

#: Secret names; read through `PluginContext.secret`, never from settings or files.
ACCESS_KEY = "ROAM_S3_ACCESS_KEY_ID"
SECRET_KEY = "ROAM_S3_SECRET_ACCESS_KEY"
SESSION_TOKEN = "ROAM_S3_SESSION_TOKEN"

# Bucket names as S3 and R2 accept them (3-63 lowercase letters, digits, dots, hyphens).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REGION = re.compile(r"^[a-z0-9-]{1,32}$")


@dataclass(frozen=True)
class Credentials:
    """Explicit credentials from roam's secrets; never printed (repr hides the values)."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def __repr__(self) -> str:
        return "Credentials(<hidden>)"


@dataclass(frozen=True)
class S3Settings:
    """Where the store lives: bucket, prefix, endpoint and region, all validated."""

    bucket: str
    prefix: str = "roam"
    endpoint_url: str | None = None
    region: str | None = None

    @property
    def host(self) -> str:
        """The endpoint's host (and port), or "aws" for AWS's own endpoints."""
        if not self.endpoint_url:
            return "aws"
        parts = urlsplit(self.endpoint_url)
        host = (parts.hostname or "").lower()
        return f"{host}:{parts.port}" if parts.port else host

    @property
    def custom_endpoint(self) -> bool:
        return bool(self.endpoint_url)

    def key(self, *parts: str) -> str:
        """The S3 key of a path below the prefix."""
        return "/".join(part for part in (self.prefix, *parts) if part)


def _text(settings: Mapping[str, Any], name: str) -> str | None:
    value = settings.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"setting {name} must be a string, not {type(value).__name__}")
    return value.strip() or None


def parse_settings(settings: Mapping[str, Any]) -> S3Settings:
    """Validate the backend's settings; a bad value is a one-line `ConfigError`."""
    bucket = _text(settings, "s3_bucket")
    if bucket is None:
        raise ConfigError("backend s3 needs the setting s3_bucket (roam config set s3_bucket NAME)")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ConfigError(f"s3_bucket {bucket!r} is not a valid bucket name "
                          "(3-63 lowercase letters, digits, dots or hyphens)")
    raw_prefix = settings.get("s3_prefix", "roam")
    prefix = "" if raw_prefix is None else _text({"s3_prefix": raw_prefix}, "s3_prefix") or ""
    prefix = prefix.strip("/")
    if prefix and not all(_SEGMENT.match(part) for part in prefix.split("/")):
        raise ConfigError(f"s3_prefix {prefix!r} must be /-separated names of letters, digits, "
                          "dots, hyphens or underscores")
    endpoint = _endpoint(_text(settings, "s3_endpoint_url"))
    region = _text(settings, "s3_region")
    if region is not None and not _REGION.match(region):
        raise ConfigError(f"s3_region {region!r} is not a region name (e.g. us-east-1, auto)")
    if region is None and endpoint is not None:
        # R2 signs with the pseudo-region "auto"; other S3 services accept us-east-1.
        host = urlsplit(endpoint).hostname or ""
        region = "auto" if host.endswith(".r2.cloudflarestorage.com") else "us-east-1"
    return S3Settings(bucket=bucket, prefix=prefix, endpoint_url=endpoint, region=region)


def _endpoint(raw: str | None) -> str | None:
    if raw is None:
        return None
    if "@" in raw:
        # Checked before anything echoes `raw`: keeps credentials out of config.yaml,
        # identity() and every error message, whatever the rest of the value looks like.
        raise ConfigError("s3_endpoint_url must not contain credentials; set "
                          f"{ACCESS_KEY} and {SECRET_KEY} as secrets instead")
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"s3_endpoint_url {raw!r} must be an http(s):// URL")
    try:
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        raise ConfigError(f"s3_endpoint_url {raw!r} has an invalid port") from None
    if parts.query or parts.fragment or parts.path.strip("/"):
        raise ConfigError(f"s3_endpoint_url {raw!r} must be just scheme://host[:port]; "
                          "put the bucket in s3_bucket and folders in s3_prefix")
    return f"{parts.scheme}://{parts.netloc}"


def read_credentials(secret: Callable[[str], str | None]) -> Credentials | None:
    """The S3 secrets roam reads, or None to fall back to boto3's own credential chain."""
    access, secret_key = secret(ACCESS_KEY), secret(SECRET_KEY)
    if not access and not secret_key:
        return None
    if not access or not secret_key:
        missing = ACCESS_KEY if not access else SECRET_KEY
        raise ConfigError(f"{missing} is missing: set both {ACCESS_KEY} and {SECRET_KEY}, "
                          "or neither to use the usual AWS credential chain")
    return Credentials(access.strip(), secret_key.strip(), (secret(SESSION_TOKEN) or None))
