"""The git backend's settings and what it derives from the remote URL.

roam never stores credentials for git: authentication is the user's SSH key/agent or git
credential helper. A URL that still carries `user:password@` works, but every name roam shows
(identity, errors, doctor) has the credentials cut out, and `doctor` says to move them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from roam_core.plugin import ConfigError, UserError

DEFAULT_BRANCH = "roam"
DEFAULT_TRANSFER_TIMEOUT = 600.0
DEFAULT_MAX_OBJECT_MB = 50
#: The most bytes of objects one push carries: a publish over it goes in parts, because a
#: host refuses a push over its own limit (GitHub: 2 GiB).
DEFAULT_MAX_PUSH_MB = 1024

#: A branch name git accepts and a shell or refspec cannot misread.
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
#: `scheme://userinfo@host…`: the userinfo part, for redacting free text such as git's stderr.
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'\"]+@")
#: scp-like ssh syntax `[user@]host:path` (no scheme, a colon before the first slash).
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?[^@/:\s]+:(?!//)")
_SSH_SCHEMES = ("ssh", "git+ssh", "ssh+git")


@dataclass(frozen=True)
class GitSettings:
    """The validated settings of one git backend."""

    remote: str
    branch: str = DEFAULT_BRANCH
    transfer_timeout: float = DEFAULT_TRANSFER_TIMEOUT
    max_object_mb: int = DEFAULT_MAX_OBJECT_MB
    max_push_mb: int = DEFAULT_MAX_PUSH_MB

    def __repr__(self) -> str:
        # the remote may carry `user:token@`: a repr must show it as every message does
        return (f"GitSettings(remote={self.public_remote!r}, branch={self.branch!r}, "
                f"transfer_timeout={self.transfer_timeout!r}, "
                f"max_object_mb={self.max_object_mb!r}, max_push_mb={self.max_push_mb!r})")

    @property
    def max_object_size(self) -> int:
        return self.max_object_mb * 1024 * 1024

    @property
    def max_push_size(self) -> int:
        return self.max_push_mb * 1024 * 1024

    @property
    def public_remote(self) -> str:
        """The remote URL without credentials: safe to show and to key state on."""
        return redact_url(self.remote)

    @property
    def namespace(self) -> str:
        """A short stable id for this remote and branch, to keep mirror refs apart."""
        raw = f"{self.public_remote}#{self.branch}".encode()
        return hashlib.sha256(raw).hexdigest()[:16]


def _positive_number(settings: Mapping[str, Any], name: str, default: float) -> float:
    raw = settings.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name} must be a number, not {raw!r}") from None
    if not value > 0:
        raise ConfigError(f"setting {name} must be greater than 0, not {raw!r}")
    return value


def parse_settings(settings: Mapping[str, Any], home: Path) -> GitSettings:
    """Validate the backend's settings; a relative local path is taken relative to `home`."""
    remote = str(settings.get("git_remote") or "").strip()
    if not remote:
        raise UserError("backend git needs the setting git_remote "
                        "(roam config set git_remote git@host:me/store.git)")
    if remote.startswith("-") or any(ch in remote for ch in "\n\r\0"):
        raise ConfigError("setting git_remote is not a URL or path git can use")
    if is_local_path(remote) and not remote.startswith("/"):
        remote = str((home / Path(remote).expanduser()).absolute())
    branch = str(settings.get("git_branch") or DEFAULT_BRANCH).strip()
    if not _BRANCH.match(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise ConfigError(f"setting git_branch is not a usable branch name: {branch!r}")
    timeout = _positive_number(settings, "git_transfer_timeout", DEFAULT_TRANSFER_TIMEOUT)
    max_mb = _whole_number(settings, "git_max_object_mb", DEFAULT_MAX_OBJECT_MB)
    push_mb = _whole_number(settings, "git_max_push_mb", max(DEFAULT_MAX_PUSH_MB, max_mb))
    if push_mb < max_mb:
        raise ConfigError(f"setting git_max_push_mb ({push_mb}) must be at least "
                          f"git_max_object_mb ({max_mb}): one push carries a whole object")
    return GitSettings(remote, branch, timeout, max_mb, push_mb)


def _whole_number(settings: Mapping[str, Any], name: str, default: int) -> int:
    value = _positive_number(settings, name, default)
    if value != int(value):
        raise ConfigError(f"setting {name} must be a whole number, not {value}")
    return int(value)


def is_local_path(remote: str) -> bool:
    """Whether `remote` is a plain filesystem path (no scheme, not scp-like ssh)."""
    return "://" not in remote and not _SCP_LIKE.match(remote)


def is_ssh_url(remote: str) -> bool:
    """Whether git will reach `remote` through ssh."""
    scheme = remote.split("://", 1)[0].lower() if "://" in remote else ""
    return scheme in _SSH_SCHEMES or (not scheme and bool(_SCP_LIKE.match(remote)))


def transport_of(remote: str) -> str:
    """"ssh", "http", "file" or "git": how git reaches `remote` (for error hints)."""
    if is_ssh_url(remote):
        return "ssh"
    if is_local_path(remote):
        return "file"
    scheme = remote.split("://", 1)[0].lower()
    return "http" if scheme in ("http", "https") else scheme


def url_has_credentials(remote: str) -> bool:
    """Whether the URL carries a password, or a user part on http(s) (often a token)."""
    return redact_url(remote) != remote


def redact_url(remote: str) -> str:
    """`remote` with credentials removed.

    http(s) userinfo is dropped whole (a lone user name there is often a token); an ssh login
    name is kept because it is not a secret, but an ssh password is dropped.
    """
    if "://" not in remote:
        return remote  # a path, or scp-like `user@host:path` whose user is a login name
    try:
        parts = urlsplit(remote)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return redact_text(remote)
    if "@" not in parts.netloc:
        return remote
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    if parts.scheme.lower() in _SSH_SCHEMES and parts.username:
        if parts.password is None:
            return remote
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact_text(text: str, remote: str | None = None) -> str:
    """Cut credentials out of free text (git's messages), including any copy of `remote`."""
    if remote:
        text = text.replace(remote, redact_url(remote))
    return _URL_USERINFO.sub(r"\g<scheme>", text)
