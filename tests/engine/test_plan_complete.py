"""Issue 19 item 5: the human plan caps only added/changed lines, never what needs a decision.

On a large pull the 40-line cap used to cut "kept local" conflicts, config-key conflicts,
removals and "cron job lands paused" lines ("… 2986 more").
"""

from __future__ import annotations

from fleet import Device
from roam_core.cli.pull import print_plan
from roam_core.engine.plan import Plan, iter_lines

MANY = 60


def _big_pull(make_device) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul v1\n")
    for number in range(5):
        a.write(f"skills/gone{number}/SKILL.md", "old\n")
    (a.root / "config.yaml").write_text(a.read("config.yaml") + "model: one\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    for number in range(MANY):  # the long, capped part comes first in the plan
        a.write(f"skills/new{number:03}/SKILL.md", "new\n")
    for number in range(5):
        (a.root / f"skills/gone{number}/SKILL.md").unlink()
    a.write("SOUL.md", "soul from a\n")
    (a.root / "config.yaml").write_text(a.read("config.yaml").replace("model: one",
                                                                      "model: two"))
    assert a.roam("push").code == 0
    b.write("SOUL.md", "soul from b\n")
    (b.root / "config.yaml").write_text(b.read("config.yaml").replace("model: one",
                                                                      "model: three"))
    return a, b


def test_pull_shows_every_decision_line_however_long_the_plan(make_device) -> None:
    _a, b = _big_pull(make_device)
    for args in (("pull",), ("diff",), ("pull", "--apply")):
        out = b.roam(*args).out
        assert "kept local (changed here since last sync): SOUL.md" in out, (args, out)
        assert "config conflict kept local: config.yaml: model" in out, (args, out)
        for number in range(5):
            assert f"removed: skills/gone{number}/SKILL.md" in out, (args, out)
        assert "more added/changed (--all or --json shows every line)" in out


def test_all_shows_every_added_line(make_device) -> None:
    _a, b = _big_pull(make_device)
    out = b.roam("pull", "--all").out
    assert all(f"added: skills/new{number:03}/SKILL.md" in out for number in range(MANY))
    assert "more added/changed" not in out


def test_every_category_but_added_and_changed_is_never_cut(capsys) -> None:
    plan = Plan(7, "a", "now", added=[f"a{n}" for n in range(100)],
                changed=[f"c{n}" for n in range(100)], removed=[f"r{n}" for n in range(100)],
                conflicts=[f"k{n}" for n in range(100)],
                configs_merged=[{"path": "config.yaml", "remote_applied": [], "local_kept": [],
                                 "conflicts_kept_local": [f"key{n}" for n in range(100)]}],
                memories_merged=[{"path": "memories/MEMORY.md", "added_remote": 0,
                                  "kept_local": 0, "removed": 0,
                                  "conflicts": [f"entry{n}" for n in range(100)]}],
                kept_by_rules=[{"path": f"p{n}", "reason": "local: rule"} for n in range(100)],
                cron_paused=[{"change": "new", "name": f"job{n}", "id": f"j{n}",
                              "path": "cron/jobs.json", "resume": f"hermes cron resume j{n}"}
                             for n in range(100)])
    lines = list(iter_lines(plan))
    print_plan(lines)
    out = capsys.readouterr().out
    for line in lines:
        if not line.startswith(("added: ", "changed: ")):
            assert line in out, line
    assert out.count("added: ") + out.count("changed: ") == 40
    assert "… 160 more added/changed" in out
