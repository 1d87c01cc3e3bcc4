"""Issue 26: `status` (as a warning) and `rules` show what would stop the next push.

status scans only the shared files changed since the last push, and remembers each file's
findings under its stat signature: a status without changes reads nothing, a second status
over the same change reads nothing again.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fleet import Device, new_key

TOKEN = "ghp_Fake0123456789abcdefghijklmnopqrstu"
CACHE = "roam/cache/secret-findings.json"


def _device(tmp_path: Path) -> Device:
    store = tmp_path / "store"
    store.mkdir()
    dev = Device(tmp_path / "a", "a", {"backend": "local", "local_dir": str(store)}, new_key())
    dev.write("SOUL.md", "persona\n")
    dev.write("skills/notes/SKILL.md", "---\nname: notes\n---\nplain\n")
    assert dev.roam("init").code == 0
    assert dev.roam("push").code == 0
    return dev


def test_status_warns_about_findings_in_changed_files_only(tmp_path: Path) -> None:
    dev = _device(tmp_path)
    clean = dev.roam("status")
    assert clean.code == 0 and "secret-looking" not in clean.out
    assert not dev.exists(CACHE), "a status without changes scanned something"

    dev.write("memories/MEMORY.md", f"note\nGITHUB_TOKEN={TOKEN}\n")
    warned = dev.roam("status")
    assert warned.code == 0, warned.err
    assert "warning: a push would stop: 1 secret-looking value(s)" in warned.out
    assert "memories/MEMORY.md:2 github-token (" in warned.out
    assert TOKEN not in warned.out + warned.err
    report = json.loads(dev.roam("status", "--json").out)
    [finding] = report["secret_findings"]
    assert (finding["path"], finding["line"], finding["rule"]) == \
        ("memories/MEMORY.md", 2, "github-token")
    assert TOKEN not in (dev.root / CACHE).read_text()

    # The same change seen again is not read again (the remembered findings are shown).
    cached = (dev.root / CACHE).stat().st_mtime_ns
    assert "memories/MEMORY.md:2" in dev.roam("status").out
    assert (dev.root / CACHE).stat().st_mtime_ns == cached

    # Allowing the finding silences it at once.
    dev.write("roam/secrets-allow.yaml", yaml.safe_dump([finding["fingerprint"]]))
    assert "secret-looking" not in dev.roam("status").out


def test_rules_lists_findings_in_every_shared_file(tmp_path: Path) -> None:
    dev = _device(tmp_path)
    dev.write("skills/ops/SKILL.md", f"---\nname: ops\n---\ntoken {TOKEN}\n")
    shown = dev.roam("rules")
    assert shown.code == 0, shown.err
    assert "skills/ops/SKILL.md:4 github-token (" in shown.out
    assert TOKEN not in shown.out
    report = json.loads(dev.roam("rules", "--json").out)
    assert [f["path"] for f in report["secret_findings"]] == ["skills/ops/SKILL.md"]
    dev.write("skills/ops/SKILL.md", "---\nname: ops\n---\nclean\n")
    assert json.loads(dev.roam("rules", "--json").out)["secret_findings"] == []
