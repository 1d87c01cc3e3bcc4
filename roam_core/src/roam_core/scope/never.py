"""The hard rules no provider and no rules.yaml can override: roam's own state and credentials.

These are matched case-insensitively, because on a case-folding disk `.ENV` is `.env`.
`roam/installed-plugins.json` is the one file under `roam/` that travels: roam writes it
itself (plugin names, versions and pinned commits, never code) so another device can list
what it lacks.
"""

from __future__ import annotations

from roam_core.scope.patterns import Glob
from roam_core.types import Scope, ScopeRule

ROAM_STATE = "roam's own state never travels"
CREDENTIALS = "credentials never travel"

#: Files and folders that hold credentials, at any depth.
CREDENTIAL_PATTERNS = (
    "**/.env", "**/.env/", "**/.env.*", "**/auth.json", "**/auth.json.*",
    "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.keystore", "**/*.jks",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
    "**/.netrc", "**/.pgpass", "**/.git-credentials", "**/.npmrc", "**/.pypirc",
    "**/credentials.json", "**/client_secret*.json",
)

HARD_RULES: tuple[ScopeRule, ...] = (
    ScopeRule("roam/installed-plugins.json", Scope.SHARED,
              "roam's record of installed plugins (names and versions, never code)"),
    ScopeRule("roam/", Scope.IGNORED, ROAM_STATE),
    ScopeRule("profiles/*/roam/", Scope.IGNORED, ROAM_STATE),
    *(ScopeRule(pattern, Scope.IGNORED, CREDENTIALS) for pattern in CREDENTIAL_PATTERNS),
)

#: Paths a `shared:` rule may not name. A rule matching one of these is refused with the
#: reason; broader rules (`skills/**`) are accepted and the hard rules still win inside them.
_ROAM_PROBES = ("roam/state.json", "roam/rules.yaml", "roam/backups/x/config.yaml")
_CREDENTIAL_PROBES = (".env", "auth.json", "auth.json.1", "profiles/default/.env",
                      "profiles/default/auth.json")


def refusal(pattern: str, glob: Glob) -> str | None:
    """Why a `shared:` rule is refused, or None when it may stand."""
    for probe in _ROAM_PROBES:
        if glob.matches(probe) or Glob(pattern, ignore_case=True).matches(probe):
            return f"it would share {probe.split('/')[0]}/ ({ROAM_STATE})"
    if glob.directory:
        return None  # a folder rule such as `profiles/work/` keeps its credentials local
    for probe in _CREDENTIAL_PROBES:
        if Glob(pattern, ignore_case=True).matches(probe):
            return f"it would share {probe} ({CREDENTIALS})"
    return None
