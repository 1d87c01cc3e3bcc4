"""End to end through the real `roam` CLI (subprocesses, a local store): memories merge,
and what the scope model keeps home never reaches the other machine."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from scope_helpers import fleet

from roam_core.merge import parse_entries

D = "\n§\n"


def test_two_machines_both_keep_every_memory(tmp_path: Path) -> None:
    a, b = fleet(tmp_path, "a", "b")
    a.write("memories/MEMORY.md", D.join(["Prefers dark mode", "Deploys on Fridays"]))
    a.write("profiles/work/memories/USER.md", "Works on roam")
    a.ok("init", "--create-remote")
    a.ok("push")
    b.ok("init")
    b.ok("pull", "--apply")
    # both learn something offline
    a.write("memories/MEMORY.md", D.join(["Prefers dark mode", "Deploys on Fridays",
                                          "Laptop uses fish"]))
    b.write("memories/MEMORY.md", D.join(["Prefers dark mode", "Deploys on Fridays",
                                          "Desktop has a GPU", "Desktop has two screens"]))
    b.write("profiles/work/memories/USER.md", D.join(["Works on roam", "Likes short PRs"]))
    a.ok("push")
    plan = b.ok("pull")
    assert "merged memories: memories/MEMORY.md (+1 remote, 0 kept local)" in plan
    b.ok("pull", "--apply")
    b.ok("push")
    a.ok("pull", "--apply")
    expected = ["Prefers dark mode", "Deploys on Fridays", "Desktop has a GPU",
                "Desktop has two screens", "Laptop uses fish"]
    assert parse_entries(a.read("memories/MEMORY.md")) == expected
    assert a.read("memories/MEMORY.md") == b.read("memories/MEMORY.md")
    assert a.read("profiles/work/memories/USER.md") == b.read("profiles/work/memories/USER.md")
    assert parse_entries(a.read("profiles/work/memories/USER.md")) == ["Works on roam",
                                                                      "Likes short PRs"]


def test_what_stays_home_never_reaches_the_other_machine(tmp_path: Path) -> None:
    a, b = fleet(tmp_path, "a", "b")
    skill = "---\nname: deploy\n---\nbundled body\n"
    for home in (a, b):  # both Hermes installs carry the same bundled skill
        home.write("skills/devops/deploy/SKILL.md", skill)
        md5 = hashlib.md5(b"SKILL.md" + skill.encode(), usedforsecurity=False).hexdigest()
        home.write("skills/.bundled_manifest", f"deploy:{md5}\n")
    a.write("SOUL.md", "persona")
    a.write(".env", "OPENAI_API_KEY=sk-canary00000000000000000000")
    a.write("auth.json", '{"token": "canary"}')
    a.write("state.db", "sqlite")
    a.write("sessions/s.jsonl", "{}")
    a.write("venv/bin/python", "#!")
    a.write("skills/mine/SKILL.md", "my own skill")
    a.write("profiles/secret/SOUL.md", "excluded profile")
    a.write("profiles/open/SOUL.md", "shared profile")
    a.write("roam/rules.yaml", "local: [profiles/secret/]\n")
    a.ok("init", "--create-remote")
    a.ok("push")
    b.ok("init")
    b.ok("pull", "--apply")
    assert b.read("SOUL.md") == b"persona"
    assert b.read("skills/mine/SKILL.md") == b"my own skill"
    assert b.read("profiles/open/SOUL.md") == b"shared profile"
    for never in (".env", "auth.json", "state.db", "sessions/s.jsonl", "venv/bin/python",
                  "profiles/secret/SOUL.md"):
        assert not (b.root / never).exists(), never
    # A edits its bundled copy: now it is A's own and travels; B keeps its pristine copy
    a.write("skills/devops/deploy/SKILL.md", skill + "edited on a\n")
    a.ok("push")
    plan = b.ok("pull")
    assert "skills/devops/deploy/SKILL.md" in plan and "bundled skill 'deploy'" in plan
    b.ok("pull", "--apply")
    assert b.read("skills/devops/deploy/SKILL.md") == skill.encode()


def test_config_keys_merge_three_way_and_comments_survive(tmp_path: Path) -> None:
    a, b = fleet(tmp_path, "a", "b", extra="model:\n  default: gpt-4o  # favourite\n"
                 "display:\n  skin: mono\n")
    a.ok("init", "--create-remote")
    a.ok("push")
    b.ok("init")
    b.ok("pull", "--apply")
    config = a.read("config.yaml").decode().replace("gpt-4o", "gpt-5")
    a.write("config.yaml", config + "terminal:\n  cwd: /home/a/x\n")
    a.ok("push")
    b.ok("pull", "--apply")
    text = b.read("config.yaml").decode()
    assert re.search(r"default: gpt-5 +# favourite", text) and "# b's config" in text
    assert "device_name: b" in text and "/home/a" not in text
