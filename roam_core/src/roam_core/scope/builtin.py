"""The built-in Hermes scope rules: an allowlist of what a Hermes home shares.

Two rule sets: `hermes`, the fixed layout rules (never-synced first, so inside one set the
stricter class always wins), and `hermes-skills`, the bundled and hub skill trees of this
particular home, pinned local. Every home-level rule is repeated under `profiles/*/`, so each
profile is classified exactly like the root. Anything no rule names is ignored by core.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from roam_core.hookspecs import hookimpl
from roam_core.types import Scope, ScopeRule, ScopeRuleSet

PROVIDER = "hermes"
SKILLS_PROVIDER = "hermes-skills"
PROFILE = "profiles/*/"

#: Never synced, at any depth: build output, VCS data, databases, locks, temporaries.
ANYWHERE_NEVER = (
    ("**/__pycache__/", "Python bytecode cache"),
    ("**/.git/", "a git repository's internals"),
    ("**/venv/", "a virtual environment"),
    ("**/.venv/", "a virtual environment"),
    ("**/node_modules/", "installed Node packages"),
    ("**/site-packages/", "installed Python packages"),
    ("**/*.db*", "database files and their sidecars (state.db, -wal, -shm, ...)"),
    ("**/*.sqlite*", "database files"),
    ("**/*.lock", "lock files"),
    ("**/*.pid", "process ids"),
    ("**/*.tmp", "temporary files"),
    ("**/*.bak*", "backup copies"),
    ("**/*.before-*", "backup copies"),
    ("**/*.pyc", "Python bytecode"),
    ("**/*.swp", "editor swap files"),
    ("**/.DS_Store", "Finder metadata"),
)

#: Never synced, at the top of the root home and of every profile.
HOME_NEVER = (
    ("sessions/", "session transcripts (state.db and sessions/ never travel)"),
    *((f"{name}/", "caches and logs") for name in (
        "cache", "audio_cache", "image_cache", "logs", "backups", "bootstrap-cache",
        "checkpoints", "sandboxes", "state-snapshots", "tmp", "reports", "profile-archives")),
    *((f"{name}/", "machine-specific runtime") for name in (
        "gateway", "bin", "hermes-agent", "plugin-data", "desktop", "installs", "node")),
    *((f"{name}/", "plugin code (installed per device)") for name in (
        "plugins", "tui-widgets", "desktop-plugins", "pets")),
    ("skills/.*/", "Hermes's own skill bookkeeping (hub lock, quarantine, caches)"),
    ("skills/.*", "Hermes's own skill bookkeeping (.bundled_manifest, markers)"),
    ("context_length_cache.yaml*", "a cache"),
    ("channel_directory.json", "machine-specific gateway state"),
)

PROFILE_NEVER = (
    (f"{PROFILE}home/", "a profile's private home folder"),
)

#: Optional tiers: active only when the device's setting of the same name is true.
OPTIONAL = (
    ("cron/jobs.json", "cron job definitions (optional tier)", "sync_cron"),
)

#: The allowlist, at the top of the root home and of every profile.
HOME_SHARED = (
    ("skills/", "skills"),
    ("memories/", "memories"),
    ("SOUL.md", "persona"),
    ("skins/", "skins"),
    ("hermes-pack.yaml", "pack manifest"),
    ("config.yaml", "config (travels as its shared projection)"),
)

PROFILE_SHARED = (
    (f"{PROFILE}profile.yaml", "profile description"),
)


def hermes_rules() -> tuple[ScopeRule, ...]:
    """The fixed layout rules, strictest first."""
    rules: list[ScopeRule] = [ScopeRule(p, Scope.IGNORED, why) for p, why in ANYWHERE_NEVER]
    for prefix in ("", PROFILE):
        rules.extend(ScopeRule(prefix + p, Scope.IGNORED, why) for p, why in HOME_NEVER)
    rules.extend(ScopeRule(p, Scope.IGNORED, why) for p, why in PROFILE_NEVER)
    for prefix in ("", PROFILE):
        rules.extend(ScopeRule(prefix + p, Scope.SHARED, why, tier=tier)
                     for p, why, tier in OPTIONAL)
    for prefix in ("", PROFILE):
        rules.extend(ScopeRule(prefix + p, Scope.SHARED, why) for p, why in HOME_SHARED)
    rules.extend(ScopeRule(p, Scope.SHARED, why) for p, why in PROFILE_SHARED)
    return tuple(rules)


def skill_rules(home: Path) -> tuple[ScopeRule, ...]:
    """This home's pristine bundled skills and hub skills, pinned local."""
    from roam_core.scope.skills import pinned_skills

    return tuple(ScopeRule(skill.pattern, Scope.LOCAL, skill.reason)
                 for skill in pinned_skills(home))


def rule_sets(home: Path) -> list[ScopeRuleSet]:
    """Both built-in rule sets for `home`."""
    return [
        ScopeRuleSet(PROVIDER, hermes_rules(), summary="what a Hermes home shares (allowlist)"),
        ScopeRuleSet(SKILLS_PROVIDER, skill_rules(home),
                     summary="bundled and hub skills and seeded category "
                     "descriptions stay local"),
    ]


@hookimpl
def roam_scope_rules(home: Path) -> Iterator[ScopeRuleSet]:
    yield from rule_sets(home)
