"""The environment of every git child: an allowlist, never a copy of roam's own environment.

roam runs inside Hermes, whose process holds the archive key, cloud secrets and model API
keys. A git child (and the ssh, credential helper and hooks it starts) gets only what git
needs to find itself, the user's config, their ssh agent, proxies and certificates.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

#: Variables passed through unchanged when the parent has them.
ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TEMP", "TMP", "SSH_AUTH_SOCK",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    # Where git and credential helpers keep their config, and how they reach a keyring;
    # TLS trust for corporate CAs. None of these holds a secret.
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "SYSTEMROOT",
})
ALLOWED_PREFIXES = ("LC_", "GIT_")

#: GIT_* variables that would point our plumbing at another repository (roam may run from a
#: git hook), or that roam sets itself.
_GIT_OWNED = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
    "GIT_QUARANTINE_PATH", "GIT_CONFIG", "GIT_SSH_COMMAND", "GIT_TERMINAL_PROMPT",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
})
#: Words that mark a variable as a credential even under the GIT_ prefix (GIT_TOKEN, …).
_SECRET_WORDS = ("TOKEN", "PASSWORD", "PASSWD", "SECRET", "CREDENTIAL", "API_KEY",
                 "PRIVATE_KEY", "ACCESS_KEY", "AUTH")

#: ssh must never ask a question and must give up on a dead host well inside roam's budget.
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")

#: Commits carry no personal identity: the store is shared by one person's machines.
IDENTITY = {
    "GIT_AUTHOR_NAME": "roam", "GIT_AUTHOR_EMAIL": "roam@localhost",
    "GIT_COMMITTER_NAME": "roam", "GIT_COMMITTER_EMAIL": "roam@localhost",
}


def _allowed(name: str) -> bool:
    if name in ALLOWED:
        return True
    if name.startswith("LC_"):
        return True
    if name.startswith("GIT_"):
        upper = name.upper()
        return name not in _GIT_OWNED and not any(word in upper for word in _SECRET_WORDS)
    return False


#: The parent's variables that choose the ssh program (all that ssh_command reads).
SSH_VARIABLES = ("GIT_SSH_COMMAND", "GIT_SSH")


def ssh_command(parent: Mapping[str, str], configured: str | None = None) -> str:
    """The ssh command git should run: the user's own choice plus roam's safety options.

    `configured` is the user's `core.sshCommand`, which GIT_SSH_COMMAND would otherwise
    override. GIT_SSH (a bare program path) is honoured by quoting it.
    """
    base = parent.get("GIT_SSH_COMMAND") or configured or ""
    if not base and parent.get("GIT_SSH"):
        base = shlex.quote(parent["GIT_SSH"])
    return " ".join([base or "ssh", *SSH_OPTIONS])


def child_env(parent: Mapping[str, str] | None = None, *,
              ssh_configured: str | None = None,
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Build a git child's environment from the allowlist; `parent` defaults to os.environ."""
    source = os.environ if parent is None else parent
    env = {name: value for name, value in source.items() if _allowed(name)}
    env.update(IDENTITY)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_SSH_COMMAND"] = ssh_command(source, ssh_configured)
    # Messages roam classifies (authentication vs. network) are matched in English.
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    if extra:
        env.update(extra)
    return env
