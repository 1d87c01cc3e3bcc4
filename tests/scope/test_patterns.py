from __future__ import annotations

import pytest

from roam_core.scope.patterns import Glob, PatternError, Relation, escape


@pytest.mark.parametrize(("pattern", "rel", "expected"), [
    ("SOUL.md", "SOUL.md", True),
    ("SOUL.md", "skills/SOUL.md", False),       # anchored at the home
    ("**/.env", ".env", True),
    ("**/.env", "profiles/w/.env", True),
    ("**/.env", "a/b/c/.env", True),
    ("skills/", "skills/a/SKILL.md", True),
    ("skills/", "skills", False),               # a folder rule never matches a file
    ("skills/", "skillsx/a", False),
    ("profiles/*/home/", "profiles/w/home/.bashrc", True),
    ("profiles/*/home/", "profiles/w/x/home/a", False),  # `*` is one segment
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**", "a/x/y", True),
    ("**", "x/y", True),
    ("*.pid", "a.pid", True),
    ("*.pid", "x/a.pid", False),
    ("**/*.db*", "profiles/x/state.db-wal", True),
    ("skills/.*", "skills/.bundled_manifest", True),
    ("skills/.*/", "skills/.hub/lock.json", True),
    ("[ab].md", "a.md", True),
    ("[!ab].md", "a.md", False),
    ("x?y", "x/y", False),                      # `?` never crosses '/'
    ("x*y", "x/y", False),
])
def test_glob_matching(pattern: str, rel: str, expected: bool) -> None:
    assert Glob(pattern).matches(rel) is expected


@pytest.mark.parametrize(("pattern", "folder", "expected"), [
    ("venv/", "venv", Relation.COVERS),
    ("**/venv/", "a/b/venv", Relation.COVERS),
    ("**/venv/", "a", Relation.MAYBE),
    ("skills/", "skills/x", Relation.COVERS),
    ("skills/", "other", Relation.NONE),
    ("SOUL.md", "x", Relation.NONE),
    ("profiles/*/skills/", "profiles", Relation.MAYBE),
    ("profiles/*/skills/", "profiles/w/skills/a", Relation.COVERS),
    ("**/*.tmp", "a", Relation.MAYBE),
    ("**", "a", Relation.COVERS),
    ("a/*", "a", Relation.MAYBE),
    ("a/*/", "a", Relation.MAYBE),             # files directly in a/ are not matched
    ("a/*/", "a/x", Relation.COVERS),
    ("cron/jobs.json", "cron", Relation.MAYBE),
    ("cron/jobs.json", "cron/x", Relation.NONE),
])
def test_relation_to_a_folder(pattern: str, folder: str, expected: Relation) -> None:
    assert Glob(pattern).relation(tuple(folder.split("/"))) is expected


def test_case_folding_for_hard_rules() -> None:
    assert Glob("**/.env", ignore_case=True).matches("profiles/w/.ENV")
    assert not Glob("**/.env").matches(".ENV")


def test_escape_makes_a_literal_pattern() -> None:
    odd = "skills/a[1]*?/"
    glob = Glob(escape(odd))
    assert glob.matches("skills/a[1]*?/SKILL.md")
    assert not glob.matches("skills/a1zz/SKILL.md")


@pytest.mark.parametrize("bad", ["", " x", "/abs", "a/../b", "a//b", "./a", "a\\b", "a**/b"])
def test_bad_patterns_are_refused(bad: str) -> None:
    with pytest.raises(PatternError):
        Glob(bad)
