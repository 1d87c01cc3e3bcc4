"""`roam rules`, `roam rules --json`, `roam rules --init` and `roam rules list`, run for real."""

from __future__ import annotations

import json
from pathlib import Path

from scope_helpers import write

from support.cli import roam_env, run_roam


def make_home(root: Path) -> Path:
    write(root, "config.yaml", "model: {default: m}\n")
    for rel in ("SOUL.md", ".env", "state.db", "memories/MEMORY.md",
                "skills/a/b/SKILL.md", "venv/bin/python", "profiles/work/SOUL.md",
                "profiles/work/home/.bashrc", "profiles/personal/memories/USER.md",
                "roam/installed-plugins.json", "roam/state.json"):
        write(root, rel)
    return root


def test_rules_reports_tiers_profiles_and_optional_items(tmp_path: Path) -> None:
    home = make_home(tmp_path / "h")
    write(home, "roam/rules.yaml", "local:\n  - profiles/work/\nhost_keys: [display.skin]\n")
    done = run_roam("--home", str(home), "rules")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"Covered root: {home}" in out
    assert "profiles/work/" in out and "rules.yaml:2" in out
    assert "Profiles: personal, work(excluded)" in out
    assert "Optional items: hooks off, sync_cron off, sync_sessions off" in out
    assert "display.skin" in out
    tiers = out.split("This home, tier by tier:")[1]
    shared, rest = tiers.split("  local (")
    local, ignored = rest.split("  ignored (")
    assert "SOUL.md" in shared and "memories/" in shared and "skills/" in shared
    assert "roam/installed-plugins.json" in shared
    assert "profiles/personal/memories/" in shared
    assert "profiles/work/" in local and "excluded" in local
    for never in (".env", "state.db", "venv/", "roam/"):
        assert never in ignored


def test_rules_json(tmp_path: Path) -> None:
    home = make_home(tmp_path / "h")
    write(home, "roam/rules.yaml", "shared: [hooks/]\n")
    done = run_roam("--home", str(home), "rules", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["root"] == str(home)
    assert report["rules"][0] == {"pattern": "hooks/", "scope": "shared",
                                  "source": "rules.yaml:1", "layer": "user",
                                  "reason": "this device's rule", "tier": "", "active": True}
    assert report["optional"] == {"hooks": True, "sync_cron": False, "sync_sessions": False}
    assert {"name": "work", "excluded": False} in report["profiles"]
    ignored = {entry["path"] for entry in report["tiers"]["ignored"]}
    assert {".env", "state.db", "venv/", "profiles/work/home/"} <= ignored
    assert report["host_keys"]["device"] == []


def test_a_profile_home_maps_up_to_its_root(tmp_path: Path) -> None:
    home = make_home(tmp_path / "h")
    done = run_roam("rules", env=roam_env(HERMES_HOME=str(home / "profiles" / "work")))
    assert done.returncode == 0, done.stderr
    assert f"Covered root: {home} (profile work maps up to it)" in done.stdout


def test_a_malformed_rules_file_is_one_line_exit_1(tmp_path: Path) -> None:
    home = make_home(tmp_path / "h")
    write(home, "roam/rules.yaml", "shared:\n  - .env\n")
    done = run_roam("--home", str(home), "rules")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"roam: configuration error: {home}/roam/rules.yaml:2: "
                                   "refusing to share '.env': it would share .env "
                                   "(credentials never travel)")
    assert "Traceback" not in done.stderr


def test_init_writes_a_template_and_never_overwrites(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    done = run_roam("--home", str(home), "rules", "--init")
    assert done.returncode == 0, done.stderr
    path = home / "roam" / "rules.yaml"
    assert path.read_text().startswith("# roam/rules.yaml")
    assert (home / "roam").stat().st_mode & 0o777 == 0o700
    path.write_text("shared: [hooks/]\n")
    again = run_roam("--home", str(home), "rules", "--init")
    assert again.returncode == 1
    assert "already exists; not overwritten" in again.stderr
    assert path.read_text() == "shared: [hooks/]\n"


def test_init_needs_an_existing_home(tmp_path: Path) -> None:
    done = run_roam("--home", str(tmp_path / "missing"), "rules", "--init")
    assert done.returncode == 1 and "no such folder" in done.stderr


def test_rules_list_still_lists_providers(tmp_path: Path) -> None:
    done = run_roam("rules", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["hermes"]["distribution"] == "roam-core"
    assert rows["hermes-skills"]["status"] == "active"
    table = run_roam("rules", "list")
    assert table.stdout.splitlines()[0].split() == ["Name", "Distribution", "Version", "Status",
                                                    "Summary"]
