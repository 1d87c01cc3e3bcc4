"""Every default path class, at the top of the home and inside a profile."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from roam_core.scope import ScopeModel
from roam_core.types import Scope

S, X = Scope.SHARED, Scope.IGNORED

#: Paths classified the same at the top of the home and inside `profiles/<name>/`.
HOME_TABLE: list[tuple[str, Scope]] = [
    # always shared
    ("SOUL.md", S), ("memories/MEMORY.md", S), ("memories/USER.md", S),
    ("skills/devops/deploy/SKILL.md", S), ("skills/devops/deploy/scripts/run.sh", S),
    ("skins/dark.yaml", S), ("hermes-pack.yaml", S), ("config.yaml", S),
    # optional tiers, off by default
    ("cron/jobs.json", X), ("hooks/on_start.py", X),
    # credentials
    (".env", X), ("auth.json", X), ("auth.json.bak", X), ("auth.json.1", X), (".env.local", X),
    # databases and sidecars
    ("state.db", X), ("state.db-wal", X), ("state.db-shm", X), ("state.db-journal", X),
    ("response_store.db", X), ("memory_store.db", X), ("cron/executions.db", X),
    ("cron/runtime.db", X),
    # sessions, caches and logs
    ("sessions/sessions.json", X), ("sessions/20240101_000000_abcdef.jsonl", X),
    ("cache/x", X), ("audio_cache/a.mp3", X), ("image_cache/i.png", X),
    ("logs/agent.log", X), ("logs/curator/x.log", X), ("backups/b.tar", X),
    ("bootstrap-cache/x", X), ("checkpoints/c", X), ("sandboxes/s/x", X),
    ("state-snapshots/s.db", X), ("tmp/t", X), ("reports/r.md", X),
    ("profile-archives/p.tar.gz", X), ("__pycache__/m.cpython-311.pyc", X),
    (".git/config", X), ("venv/bin/python", X), (".venv/lib/x.py", X),
    ("skills/.hub/lock.json", X), ("skills/.hub/quarantine/x/SKILL.md", X),
    ("skills/.bundled_manifest", X), ("skills/.curator_suppressed", X),
    # locks, pids, temporaries, backups
    ("auth.lock", X), ("gateway.lock", X), ("cron/.jobs.lock", X),
    ("memories/MEMORY.md.lock", X), ("memories/.mem_x1y2.tmp", X), ("gateway.pid", X),
    ("config.yaml.bak", X), ("config.yaml.bak.2", X), ("config.yaml.before-update", X),
    ("skills/a/b/notes.tmp", X),
    # machine-specific runtime and plugin code
    ("gateway/state.json", X), ("bin/tirith", X), ("hermes-agent/run.py", X),
    ("plugin-data/x", X), ("desktop/x", X), ("installs/x", X), ("node_modules/a/index.js", X),
    ("skills/a/b/node_modules/x.js", X), ("skills/a/b/__pycache__/m.pyc", X),
    ("context_length_cache.yaml", X), ("context_length_cache.yaml.tmp", X),
    ("channel_directory.json", X), ("plugins/probe/__init__.py", X),
    ("tui-widgets/w.js", X), ("desktop-plugins/d.js", X), ("pets/cat.json", X),
    # not on the allowlist
    ("notes.txt", X), ("pairing/telegram.json", X), (".update_check", X),
    (".skills_prompt_snapshot.json", X), ("workspace/file.py", X), ("plans/p.md", X),
    ("scripts/x.sh", X), ("session-exports/s.md", X),
]

ROOT_ONLY: list[tuple[str, Scope]] = [
    ("roam/installed-plugins.json", S), ("roam/state.json", X), ("roam/rules.yaml", X),
    ("roam/backups/20240101/config.yaml", X), ("roam/lock", X),
    ("profiles/README.md", X), ("active_profile", X),
]

PROFILE_ONLY: list[tuple[str, Scope]] = [
    ("profiles/work/profile.yaml", S), ("profiles/work/home/.bashrc", X),
    ("profiles/work/home/.config/x", X), ("profiles/work/roam/state.json", X),
    ("profiles/work/distribution.yaml", X),
]

TABLE = [*HOME_TABLE, *[(f"profiles/work/{rel}", scope) for rel, scope in HOME_TABLE],
         *ROOT_ONLY, *PROFILE_ONLY]


@pytest.fixture
def model(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> ScopeModel:
    return scope_of(tmp_path)


@pytest.mark.parametrize(("rel", "expected"), TABLE, ids=[rel for rel, _ in TABLE])
def test_default_classification(model: ScopeModel, rel: str, expected: Scope) -> None:
    scope, reason = model.explain(rel)
    assert scope is expected, reason
    assert reason


#: Never-synced classes inside folders that are otherwise shared: the rules, not the
#: allowlist default, must be what keeps these out.
NEVER_INSIDE_SHARED = [
    "memories/memory_store.db", "memories/MEMORY.md.db-wal", "memories/x.sqlite3",
    "memories/MEMORY.md.lock", "memories/.mem_abc.tmp", "memories/MEMORY.md.bak",
    "memories/USER.md.before-merge", "skills/a/b/run.pid", "skills/a/b/.git/HEAD",
    "skills/a/b/venv/bin/python", "skills/a/b/.venv/x", "skills/a/b/site-packages/x.py",
    "skills/a/b/node_modules/x.js", "skills/a/b/__pycache__/m.pyc", "skills/a/b/m.pyc",
    "skills/a/b/.DS_Store", "skills/a/b/.SKILL.md.swp", "skills/.hub/lock.json",
    "skills/a/b/.env", "skills/a/b/id_ed25519", "skills/a/b/cert.pem", "skills/a/b/tls.key",
    "skins/.netrc", "skills/a/b/credentials.json", "skills/a/b/auth.json.1",
]


@pytest.mark.parametrize("rel", [*NEVER_INSIDE_SHARED,
                                 *(f"profiles/p/{rel}" for rel in NEVER_INSIDE_SHARED)])
def test_never_classes_hold_inside_shared_folders(model: ScopeModel, rel: str) -> None:
    scope, reason = model.explain(rel)
    assert scope is X, reason
    assert "allowlist" not in reason


@pytest.mark.parametrize("rel", ["state.db", "sessions/s.jsonl", "logs/agent.log", ".env",
                                 "plugins/p/__init__.py", "cache/x", "gateway.pid",
                                 "profiles/p/home/x", "channel_directory.json"])
def test_never_classes_are_named_by_their_rule(model: ScopeModel, rel: str) -> None:
    assert "allowlist" not in model.explain(rel)[1]


def test_profile_class_is_never_looser_than_top_level(model: ScopeModel) -> None:
    for rel, _scope in HOME_TABLE:
        top = model.classify(rel)
        inner = model.classify(f"profiles/any-name/{rel}")
        assert inner.strictness >= top.strictness, rel


@pytest.mark.parametrize("rel", [".ENV", "Auth.json", "profiles/w/.Env", "ROAM/state.json"])
def test_hard_rules_fold_case(model: ScopeModel, rel: str) -> None:
    assert model.classify(rel) is Scope.IGNORED


@pytest.mark.parametrize("rel", ["", "/etc/passwd", "../x", "a/../b", "./SOUL.md", "a//b",
                                 "skills/x/", "SOUL.md\x00"])
def test_unsafe_paths_are_ignored(model: ScopeModel, rel: str) -> None:
    assert model.explain(rel) == (Scope.IGNORED, "not a safe relative path")


def test_cron_tier_shares_job_definitions_only(tmp_path: Path,
                                               scope_of: Callable[..., ScopeModel]) -> None:
    model = scope_of(tmp_path, {"sync_cron": True})
    for prefix in ("", "profiles/work/"):
        assert model.classify(f"{prefix}cron/jobs.json") is Scope.SHARED
        for other in ("cron/.jobs.lock", "cron/output/x.md", "cron/runtime.db",
                      "cron/executions.db", "cron/.jobs_abc.tmp"):
            assert model.classify(f"{prefix}{other}") is Scope.IGNORED, other
    assert model.optional_items()["sync_cron"] is True


def test_tier_setting_must_be_a_boolean(tmp_path: Path,
                                        scope_of: Callable[..., ScopeModel]) -> None:
    from roam_core.errors import ConfigError

    with pytest.raises(ConfigError, match="sync_cron"):
        scope_of(tmp_path, {"sync_cron": "yes please"})


def test_explain_names_rule_and_provider(model: ScopeModel) -> None:
    assert "from core" in model.explain(".env")[1]
    assert "[memories/ from hermes]" in model.explain("memories/MEMORY.md")[1]
    assert "allowlist" in model.explain("notes.txt")[1]


def test_is_config(model: ScopeModel) -> None:
    assert model.is_config("config.yaml")
    assert model.is_config("profiles/work/config.yaml")
    assert not model.is_config("skills/config.yaml")
    assert not model.is_config("profiles/work/x/config.yaml")
    assert not model.is_config("profiles/../config.yaml")
