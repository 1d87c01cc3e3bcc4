"""The hard rules no provider and no rules.yaml can override: roam's own state and credentials.

These are matched case-insensitively, because on a case-folding disk `.ENV` is `.env`.
`roam/installed-plugins.json` is the one file under `roam/` that travels: roam writes it
itself (plugin names, versions and pinned commits, never code) so another device can list
what it lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roam_core.scope.patterns import Glob
from roam_core.types import Scope, ScopeRule

ROAM_STATE = "roam's own state never travels"
CREDENTIALS = "credentials never travel"

#: Files and folders that hold credentials, at any depth: Hermes's own, then the common
#: tools' credential stores (a skill folder copied from a project brings them along).
CREDENTIAL_PATTERNS = (
    "**/.env", "**/.env/", "**/.env.*", "**/.env.*/", "**/.envrc",
    "**/auth.json", "**/auth.json.*",
    # keys and key stores
    "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.keystore", "**/*.jks",
    "**/keystore*", "**/*.kdbx", "**/secring.gpg",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*", "**/.ssh/", "**/.gnupg/",
    # tool credential files
    "**/.netrc", "**/.pgpass", "**/.git-credentials", "**/.npmrc", "**/.pypirc",
    "**/.htpasswd", "**/.dockercfg", "**/.docker/config.json", "**/.boto", "**/.s3cfg",
    "**/credentials", "**/credentials.json", "**/client_secret*.json",
    "**/application_default_credentials.json", "**/service-account*.json",
    "**/secrets.yaml", "**/secrets.yml", "**/token.txt",
    # cloud and cluster CLIs, infrastructure state
    "**/.aws/", "**/.azure/", "**/.config/gcloud/", "**/.config/gh/hosts.yml",
    "**/.kube/", "**/kubeconfig", "**/*.kubeconfig", "**/.terraform.d/credentials.tfrc.json",
    "**/terraform.tfstate", "**/terraform.tfstate.*", "**/*.tfstate",
)
#: Hermes's own secret stores: never shareable, not even by `never_list_exceptions`.
HERMES_SECRET_NAMES = (".env", "auth.json")
ALLOWED_CREDENTIALS = "shared on purpose (never_list_exceptions)"

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
    # the pattern's own text read as a path: `skills/**/secrets.yaml` names a credential file
    for credential in CREDENTIAL_PATTERNS:
        if Glob(credential, ignore_case=True).matches(pattern):
            return f"it names credential files ({credential.removeprefix('**/')}); " \
                   f"{CREDENTIALS}; name one file in never_list_exceptions if you must"
    return None


def allowed_credentials(value: object) -> tuple[str, ...]:
    """The paths of the `never_list_exceptions` setting, checked.

    Raises:
        ConfigError: unless it is a list of plain relative paths (no wildcard) outside
            `roam/` that are not Hermes's own `.env` or `auth.json`.
    """
    from roam_core.errors import ConfigError

    if value in (None, "", []):
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError("never_list_exceptions must be a list of file paths, e.g. "
                          "[skills/deploy/secrets.yaml]")
    paths = []
    for item in value:
        path = item.strip().strip("/")
        name = path.rsplit("/", 1)[-1].lower()
        if not path or any(c in path for c in "*?[") or ".." in path.split("/"):
            raise ConfigError(f"never_list_exceptions: {item!r} must name one file (no "
                              "wildcards), relative to the home")
        if path.lower().split("/")[0] == "roam" or name in HERMES_SECRET_NAMES \
                or name.startswith(".env"):
            raise ConfigError(f"never_list_exceptions: {item!r} can never be shared")
        paths.append(path)
    return tuple(paths)


def hard_rules(settings: Mapping[str, Any]) -> tuple[ScopeRule, ...]:
    """The hard rules, with the files `never_list_exceptions` names shared before them."""
    allowed = allowed_credentials(settings.get("never_list_exceptions"))
    if not allowed:
        return HARD_RULES
    roam_rules = HARD_RULES[:3]
    return (*roam_rules, *(ScopeRule(path, Scope.SHARED, ALLOWED_CREDENTIALS)
                           for path in allowed), *HARD_RULES[3:])
