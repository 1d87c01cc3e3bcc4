"""Issue 26: credential files of every common tool never travel, at any depth of shared folders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_rules_file import rules

from roam_core.errors import ConfigError
from roam_core.scope import ScopeModel
from roam_core.types import Scope

CREDENTIAL_FILES = [
    ".envrc", ".env.d/prod", "credentials", ".aws/credentials", ".aws/config", ".ssh/config",
    ".ssh/known_hosts", ".gnupg/private-keys-v1.d/k.key", ".gnupg/pubring.kbx", "secring.gpg",
    "application_default_credentials.json", "service-account-prod.json", "vault.kdbx",
    ".htpasswd", ".dockercfg", ".docker/config.json", "secrets.yaml", "secrets.yml",
    "token.txt", ".kube/config", "kubeconfig", ".pypirc", ".npmrc", ".git-credentials",
    "cert.p12", "cert.pfx", "store.jks", "keystore.bks", "terraform.tfstate",
    "terraform.tfstate.backup", ".config/gcloud/credentials.db", ".azure/accessTokens.json",
    ".config/gh/hosts.yml", ".boto", ".s3cfg", ".terraform.d/credentials.tfrc.json",
]
SHARED_FOLDERS = ["skills/tools/deploy/", "profiles/work/skills/x/", "skins/", "memories/",
                  "profiles/work/memories/", ""]


@pytest.mark.parametrize("name", CREDENTIAL_FILES)
def test_credential_files_never_travel_at_any_depth(
        tmp_path: Path, scope_of: Callable[..., ScopeModel], name: str) -> None:
    rules(tmp_path, "shared:\n  - skills/**\n  - skins/**\n  - memories/**\n  - profiles/*/\n")
    model = scope_of(tmp_path)
    for folder in SHARED_FOLDERS:
        for spelling in (name, name.upper()):
            assert model.classify(folder + spelling) is Scope.IGNORED, folder + spelling
    assert model.classify("skills/tools/deploy/SKILL.md") is Scope.SHARED


@pytest.mark.parametrize("pattern", ["skills/x/.envrc", "skills/**/secrets.yaml",
                                     "skills/x/.aws/credentials", "skills/*.kdbx",
                                     "memories/token.txt", "skills/x/.ssh/config"])
def test_shared_rules_naming_credential_files_are_refused(
        tmp_path: Path, scope_of: Callable[..., ScopeModel], pattern: str) -> None:
    rules(tmp_path, f"shared:\n  - '{pattern}'\n")
    with pytest.raises(ConfigError, match="credentials never travel"):
        scope_of(tmp_path)


def test_one_named_credential_file_may_be_shared_on_purpose(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    model = scope_of(tmp_path, {"never_list_exceptions": ["skills/deploy/secrets.yaml"]})
    assert model.classify("skills/deploy/secrets.yaml") is Scope.SHARED
    assert model.classify("skills/other/secrets.yaml") is Scope.IGNORED
    for bad in ([".env"], ["skills/*/secrets.yaml"], ["roam/state.json"], "x"):
        with pytest.raises(ConfigError, match="never_list_exceptions"):
            scope_of(tmp_path, {"never_list_exceptions": bad})
