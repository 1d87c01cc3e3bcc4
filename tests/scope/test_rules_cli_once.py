"""`roam rules` lists an excluded profile once, not once per rule that names it."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_roam


def test_excluded_profile_is_listed_once(tmp_path: Path) -> None:
    (tmp_path / "roam").mkdir()
    (tmp_path / "roam" / "rules.yaml").write_text("local: [profiles/work/]\n")
    (tmp_path / "profiles" / "work").mkdir(parents=True)
    (tmp_path / "profiles" / "work" / "SOUL.md").write_text("work\n")
    result = run_roam("--home", str(tmp_path), "rules", "--json")
    assert result.returncode == 0, result.stderr
    local = [row["path"] for row in json.loads(result.stdout)["tiers"]["local"]]
    assert local.count("profiles/work/") == 1, local
