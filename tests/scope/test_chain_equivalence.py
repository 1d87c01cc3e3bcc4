"""The fast classification (narrowed chains, one regex per layer) agrees with the plain
definition: every rule matched against the whole path, in precedence order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scope_helpers import bare_manager, write

from roam_core.scope import Rule, ScopeModel, load_scope
from roam_core.types import Scope

SEGMENTS = ["skills", "memories", "profiles", "work", "roam", "venv", "hooks", "cron",
            "jobs.json", "SOUL.md", ".env", "auth.json.1", "state.db-wal", "x.tmp", "home",
            ".hub", "a", "b.md", "node_modules", "config.yaml", "logs", "ROAM", ".ENV",
            "installed-plugins.json", "profile.yaml", "sessions", "c[1]", "notes.txt"]


#: Where the rules have something to say, so random tails land on interesting ground.
PREFIXES = ["", "skills/a/c[1]", "skills/a", "profiles/work", "profiles/work/a", "profiles/x",
            "hooks", "hooks/venv", "cron", "roam", "profiles/x/skills", "memories"]


def reference(model: ScopeModel, rel: str) -> Scope:
    rules = [rule for rule in model.rules() if rule.active]
    for layer in ("hard", "user"):
        for rule in (r for r in rules if r.layer == layer):
            if rule.matches(rel):
                return rule.scope
    best: Rule | None = None
    for source in sorted({r.source for r in rules if r.layer == "provider"}):
        found = next((r for r in rules if r.layer == "provider" and r.source == source
                      and r.matches(rel)), None)
        if found and (best is None or found.scope.strictness > best.scope.strictness):
            best = found
    return best.scope if best else Scope.IGNORED


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> ScopeModel:
    """User rules, a pinned hub skill and an optional tier on: every layer has rules."""
    root = tmp_path_factory.mktemp("home")
    write(root, "roam/rules.yaml",
          "ignored: [hooks/venv/]\nshared: [hooks/, 'profiles/*/notes.txt']\n"
          "local: [profiles/work/a/, '**/b.md']\n")
    write(root, "skills/.hub/lock.json", '{"installed": {"c": {"install_path": "a/c[1]"}}}')
    built = load_scope(root, bare_manager(), {"sync_cron": True})
    assert {rule.layer for rule in built.rules()} == {"hard", "user", "provider"}
    assert any(rule.source == "hermes-skills" for rule in built.rules())
    return built


@settings(max_examples=400, deadline=None)
@given(paths=st.lists(st.tuples(st.sampled_from(PREFIXES),
                                st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4))
                      .map(lambda p: "/".join([*filter(None, [p[0]]), *p[1]])),
                      min_size=1, max_size=20))
def test_fast_classification_matches_the_definition(model: ScopeModel,
                                                    paths: list[str]) -> None:
    for rel in paths:
        assert model.classify(rel) is reference(model, rel), rel
