"""Bundled skills stay local while pristine; hub skills stay local; edited ones sync."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from scope_helpers import write

from roam_core.scope import ScopeModel
from roam_core.scope.skills import dir_hash, read_manifest, skill_name
from roam_core.types import Scope

SKILL = "---\nname: {name}\ndescription: d\n---\n# body\n"


def reference_hash(folder: Path) -> str:
    """Hermes's `_dir_hash`, written out again from Hermes Agent's bundled-skills sync."""
    digest = hashlib.md5(usedforsecurity=False)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode("utf-8"))
            digest.update(path.read_bytes())
    return digest.hexdigest()


def bundle(home: Path, rel: str, name: str, files: dict[str, bytes] | None = None) -> Path:
    folder = home / "skills" / rel
    write(folder, "SKILL.md", SKILL.format(name=name))
    for sub, data in (files or {}).items():
        write(folder, sub, data)
    return folder


def record(home: Path, entries: dict[str, str]) -> None:
    lines = "".join(f"{name}:{value}\n" for name, value in sorted(entries.items()))
    write(home, "skills/.bundled_manifest", lines)


def test_hash_vector() -> None:
    """A fixed vector: no separator, relative POSIX path then bytes, Path sort order."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write(folder, "SKILL.md", b"x")
        write(folder, "a/b.txt", b"y")
        write(folder, "a-b.txt", b"z")
        # Path order compares parts: "SKILL.md" < "a" < "a-b.txt" (so "a/b.txt" before "a-b.txt")
        expected = hashlib.md5(b"SKILL.mdx" + b"a/b.txty" + b"a-b.txtz",
                               usedforsecurity=False).hexdigest()
        assert dir_hash(folder) == expected == reference_hash(folder)


def test_pristine_bundled_skill_is_local_and_edited_one_is_shared(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    pristine = bundle(tmp_path, "devops/deploy", "deploy", {"scripts/run.sh": b"echo"})
    edited = bundle(tmp_path, "notes/journal", "journal")
    record(tmp_path, {"deploy": reference_hash(pristine), "journal": reference_hash(edited)})
    (edited / "SKILL.md").write_text(SKILL.format(name="journal") + "my own edit\n")
    bundle(tmp_path, "mine/own", "own")
    model = scope_of(tmp_path)
    scope, reason = model.explain("skills/devops/deploy/scripts/run.sh")
    assert scope is Scope.LOCAL and "bundled skill 'deploy' is unmodified" in reason
    assert "hermes-skills" in reason
    assert model.classify("skills/notes/journal/SKILL.md") is Scope.SHARED
    assert model.classify("skills/mine/own/SKILL.md") is Scope.SHARED
    assert [e.rel for e in model.walk()] == ["skills/mine/own/SKILL.md",
                                             "skills/notes/journal/SKILL.md"]


def test_the_manifest_is_keyed_by_front_matter_name(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    folder = bundle(tmp_path, "cat/folder-name", "real-name")
    record(tmp_path, {"real-name": reference_hash(folder)})
    assert skill_name(folder / "SKILL.md") == "real-name"
    assert scope_of(tmp_path).classify("skills/cat/folder-name/SKILL.md") is Scope.LOCAL


def test_v1_manifest_without_hashes_pins_the_copy(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    bundle(tmp_path, "cat/s", "s")
    write(tmp_path, "skills/.bundled_manifest", "s\n")
    assert read_manifest(tmp_path / "skills/.bundled_manifest") == {"s": ""}
    assert scope_of(tmp_path).classify("skills/cat/s/SKILL.md") is Scope.LOCAL


def test_bundled_skills_inside_a_profile(tmp_path: Path,
                                         scope_of: Callable[..., ScopeModel]) -> None:
    profile = tmp_path / "profiles" / "work"
    folder = bundle(profile, "cat/s", "s")
    record(profile, {"s": reference_hash(folder)})
    bundle(tmp_path, "cat/s", "s")  # same skill at the top level, not in the root's manifest
    model = scope_of(tmp_path)
    assert model.classify("profiles/work/skills/cat/s/SKILL.md") is Scope.LOCAL
    assert model.classify("skills/cat/s/SKILL.md") is Scope.SHARED


def test_hub_skills_stay_local(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    bundle(tmp_path, "research/arxiv", "arxiv")
    bundle(tmp_path, "mine/x", "x")
    lock = {"version": 1, "installed": {
        "arxiv": {"source": "hub", "install_path": "research/arxiv",
                  "content_hash": "sha256:0123456789abcdef"},
        "evil": {"install_path": "../../.."},
        "odd": {"install_path": 7},
    }}
    write(tmp_path, "skills/.hub/lock.json", json.dumps(lock))
    profile = tmp_path / "profiles" / "p"
    bundle(profile, "a/b", "b")
    write(profile, "skills/.hub/lock.json", json.dumps(
        {"version": 1, "installed": {"b": {"install_path": "a/b"}}}))
    model = scope_of(tmp_path)
    scope, reason = model.explain("skills/research/arxiv/SKILL.md")
    assert scope is Scope.LOCAL and "hub skill 'arxiv'" in reason
    assert model.classify("profiles/p/skills/a/b/SKILL.md") is Scope.LOCAL
    assert model.classify("skills/mine/x/SKILL.md") is Scope.SHARED
    assert model.classify("skills/.hub/lock.json") is Scope.IGNORED


@pytest.mark.parametrize("content", ["{not json", "[]", '{"installed": []}'])
def test_a_broken_hub_lock_pins_nothing(tmp_path: Path, scope_of: Callable[..., ScopeModel],
                                        content: str) -> None:
    bundle(tmp_path, "a/b", "b")
    write(tmp_path, "skills/.hub/lock.json", content)
    assert scope_of(tmp_path).classify("skills/a/b/SKILL.md") is Scope.SHARED


def test_skill_folders_with_glob_characters(tmp_path: Path,
                                            scope_of: Callable[..., ScopeModel]) -> None:
    folder = bundle(tmp_path, "c/s[1]*", "s")
    bundle(tmp_path, "c/s1x", "other")
    record(tmp_path, {"s": reference_hash(folder)})
    model = scope_of(tmp_path)
    assert model.classify("skills/c/s[1]*/SKILL.md") is Scope.LOCAL
    assert model.classify("skills/c/s1x/SKILL.md") is Scope.SHARED


def test_a_seeded_category_description_stays_local_and_an_edited_one_syncs(
        tmp_path: Path, scope_of: Callable[..., ScopeModel],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Hermes copies `<category>/DESCRIPTION.md` from its bundled skills (issue 25, item 4)."""
    shipped = tmp_path / "hermes-bundled"
    write(shipped, "devops/DESCRIPTION.md", "DevOps skills.\n")
    write(shipped, "notes/DESCRIPTION.md", "Note-taking skills.\n")
    monkeypatch.setenv("HERMES_BUNDLED_SKILLS", str(shipped))
    home = tmp_path / "home"
    pristine = bundle(home, "devops/deploy", "deploy")
    record(home, {"deploy": reference_hash(pristine)})
    write(home, "skills/devops/DESCRIPTION.md", "DevOps skills.\n")              # as seeded
    write(home, "skills/notes/DESCRIPTION.md", "My notes, my way.\n")            # edited
    write(home, "skills/mine/DESCRIPTION.md", "A category of my own.\n")        # the user's
    write(home, "profiles/work/skills/devops/DESCRIPTION.md", "DevOps skills.\n")
    model = scope_of(home)
    scope, reason = model.explain("skills/devops/DESCRIPTION.md")
    assert scope is Scope.LOCAL and "seeded" in reason
    assert model.classify("profiles/work/skills/devops/DESCRIPTION.md") is Scope.LOCAL
    assert model.classify("skills/notes/DESCRIPTION.md") is Scope.SHARED
    assert model.classify("skills/mine/DESCRIPTION.md") is Scope.SHARED
