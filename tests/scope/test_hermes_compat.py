"""Against the real Hermes 0.19: its bundled-skill manifest pins what it installed, and roam
reads and writes memory files exactly as its memory tool does."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from scope_helpers import write

from roam_core.merge import merge_memory, parse_entries, render_entries
from roam_core.scope import ScopeModel
from roam_core.scope.skills import dir_hash, read_manifest
from roam_core.types import Scope
from support.hermes_env import HermesVenv, ensure_hermes_venv

pytestmark = pytest.mark.hermes


@pytest.fixture(scope="module")
def venv() -> HermesVenv:
    return ensure_hermes_venv()

SCRIPT = """
import json, sys
from pathlib import Path
from tools import skills_sync
from tools.memory_tool import MemoryStore
task = json.loads(sys.argv[1])
out = {}
if task.get("sync"):
    skills_sync.sync_skills(quiet=True)
out["hashes"] = {p: skills_sync._dir_hash(Path(p)) for p in task.get("hash", [])}
for path, entries in task.get("write", {}).items():
    MemoryStore._write_file(Path(path), entries)
out["read"] = {p: MemoryStore._read_file(Path(p)) for p in task.get("read", [])}
print(json.dumps(out))
"""


def hermes(venv: HermesVenv, home: Path, task: dict, bundled: Path | None = None) -> dict:
    env = {"PATH": f"{venv.bin}:/usr/bin:/bin", "HOME": str(home.parent),
           "HERMES_HOME": str(home), "LANG": "C.UTF-8"}
    if bundled is not None:
        env["HERMES_BUNDLED_SKILLS"] = str(bundled)
    done = subprocess.run([str(venv.python), "-c", SCRIPT, json.dumps(task)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=home.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_skills_installed_by_hermes_are_pinned_until_edited(
        venv: HermesVenv, tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    bundled = tmp_path / "bundled"
    write(bundled, "devops/deploy/SKILL.md", "---\nname: deploy-it\ndescription: d\n---\nbody\n")
    write(bundled, "devops/deploy/scripts/run.sh", "#!/bin/sh\necho hi\n")
    write(bundled, "devops/deploy/a-b/x.txt", "1")
    write(bundled, "devops/deploy/a/b.txt", "2")
    write(bundled, "notes/journal/SKILL.md", "---\nname: 'journal'\n---\n")
    home = tmp_path / "h" / ".hermes"
    home.mkdir(parents=True)
    result = hermes(venv, home, {"sync": True, "hash": [str(bundled / "devops/deploy")]},
                    bundled)
    assert result["hashes"][str(bundled / "devops/deploy")] == dir_hash(bundled / "devops/deploy")
    manifest = read_manifest(home / "skills" / ".bundled_manifest")
    assert set(manifest) == {"deploy-it", "journal"}
    assert manifest["deploy-it"] == dir_hash(home / "skills" / "devops" / "deploy")

    model = scope_of(home)
    assert model.classify("skills/devops/deploy/scripts/run.sh") is Scope.LOCAL
    assert model.classify("skills/notes/journal/SKILL.md") is Scope.LOCAL
    (home / "skills/notes/journal/SKILL.md").write_text("---\nname: 'journal'\n---\nmine\n")
    model = scope_of(home)
    assert model.classify("skills/notes/journal/SKILL.md") is Scope.SHARED
    assert model.classify("skills/devops/deploy/SKILL.md") is Scope.LOCAL
    assert [e.rel for e in model.walk()] == ["skills/notes/journal/SKILL.md"]


def test_memory_files_round_trip_with_hermes(venv: HermesVenv, tmp_path: Path) -> None:
    home = tmp_path / "h" / ".hermes"
    memories = home / "memories"
    memories.mkdir(parents=True)
    theirs = memories / "MEMORY.md"
    ours = memories / "USER.md"
    entries = ["Prefers dark mode", "Multi-line\nentry § with a section sign", "Last"]
    ours.write_bytes(render_entries(entries))
    merged = merge_memory(render_entries(entries[:1]), render_entries(entries[:2]),
                          render_entries([entries[0], entries[2]]))
    assert merged is not None
    (memories / "merged.md").write_bytes(merged.data)
    result = hermes(venv, home, {
        "write": {str(theirs): entries},
        "read": [str(ours), str(memories / "merged.md")],
    })
    assert theirs.read_bytes() == ours.read_bytes()  # byte for byte what Hermes writes
    assert parse_entries(theirs.read_bytes()) == entries
    assert result["read"][str(ours)] == entries
    assert result["read"][str(memories / "merged.md")] == entries
