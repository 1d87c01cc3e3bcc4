"""The session archive through push and pull, with a stand-in exporter (no Hermes needed).

The stand-in (stand_in_hermes.py, installed as `hermes` on PATH) writes what Hermes's md
exporter writes; it makes the cases real Hermes cannot be asked for on cue: a failing or
hanging export, many sessions of chosen sizes, and a record of the child's environment.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hermes_fleet import new_key, plain_home, roam_inprocess

from roam_core.tiers import sessions as sessions_tier
from support.state_files import read_state

STAND_IN = Path(__file__).with_name("stand_in_hermes.py")


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`hermes` on PATH is the stand-in exporter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "hermes"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {STAND_IN} \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    return script


@pytest.fixture
def homes(tmp_path: Path) -> Any:
    key, store = new_key(), tmp_path / "store"

    def make(name: str, **settings: Any) -> Path:
        return plain_home(tmp_path / name / ".hermes", name, store, key, **settings)

    return make


def sessions(home: Path, *items: tuple[str, str, int], **extra: Any) -> None:
    """Give `home` (a root or a profile) ended sessions: (id, ended_at, body size)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "state.db").write_bytes(b"")
    spec = {"sessions": [{"id": sid, "ended_at": ended, "body": "x" * size,
                          "title": f"title of {sid}"} for sid, ended, size in items], **extra}
    (home / "stand-in.json").write_text(json.dumps(spec))


def roam(home: Path, *args: str) -> Any:
    code, out, err = roam_inprocess(home, *args)
    assert code == 0, (code, out, err)
    return json.loads(out) if "--json" in args else out


def device_id(home: Path) -> str:
    """The device's id: its archive namespace in the store."""
    return str(read_state(home)["device_id"])


def archive_paths(result: dict[str, Any]) -> list[str]:
    return sorted(p for p in result["added"] if p.startswith("archive/"))


def test_newest_first_under_one_shared_cap(stand_in: Path, homes: Any) -> None:
    desk = homes("desk", sync_sessions=True, sessions_max_mb=0.0019)   # 1992 bytes: two of three
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 500))
    sessions(desk / "profiles/work", ("20260103_090000_bbbbbb", "2026-01-03T09:30:00Z", 500),
             ("20260102_090000_cccccc", "2026-01-02T09:30:00Z", 500))
    roam(desk, "init", "--create-remote")
    pushed = roam(desk, "push", "--json")
    assert archive_paths(pushed) == [
        f"archive/sessions/{device_id(desk)}/work/20260102_090000_cccccc.md",
        f"archive/sessions/{device_id(desk)}/work/20260103_090000_bbbbbb.md"]
    assert pushed["session_archive"]["over_cap"] == 1
    assert any("1 older session(s) left out" in note for note in pushed["notes"])
    # Every export stamps a new time into each file; the staged copies stand.
    assert roam(desk, "push", "--json")["nothing_to_push"] is True
    # A newer session pushes the oldest published one out of the namespace.
    sessions(desk, ("20260104_090000_dddddd", "2026-01-04T09:30:00Z", 500))
    third = roam(desk, "push", "--json")
    assert archive_paths(third) == [
        f"archive/sessions/{device_id(desk)}/default/20260104_090000_dddddd.md"]
    assert third["removed"] == [
        f"archive/sessions/{device_id(desk)}/work/20260102_090000_cccccc.md"]


def test_the_child_gets_argv_a_clean_environment_and_no_stdin(
        stand_in: Path, homes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    desk = homes("desk", sync_sessions=True)
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10))
    sessions(desk / "profiles/work", ("20260102_090000_bbbbbb", "2026-01-02T09:30:00Z", 10))
    for name, value in (("ROAM_S3_SECRET_ACCESS_KEY", "canary-s3"),
                        ("OPENAI_API_KEY", "canary-openai"), ("HERMES_HOME", "/elsewhere"),
                        ("GIT_TOKEN", "canary-git")):
        monkeypatch.setenv(name, value)
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    root_seen = json.loads((desk / "stand-in-seen.json").read_text())
    work_seen = json.loads((desk / "profiles/work/stand-in-seen.json").read_text())
    assert root_seen["argv"][:2] == ["-p", "default"]            # a sticky profile is defeated
    assert work_seen["argv"][:2] == ["sessions", "export"]
    for seen, home in ((root_seen, desk), (work_seen, desk / "profiles/work")):
        assert {"--format", "md", "--redact"} <= set(seen["argv"])
        assert seen["stdin"] == ""
        assert seen["env"]["HERMES_HOME"] == str(home)
        dumped = json.dumps(seen["env"])
        assert "canary" not in dumped and "ROAM_" not in dumped
    key = (desk / ".env").read_text().split("=", 1)[1].strip()
    assert key not in json.dumps(root_seen) and key not in json.dumps(work_seen)


def test_a_failing_export_keeps_that_profile_and_the_push_goes_on(
        stand_in: Path, homes: Any) -> None:
    desk = homes("desk", sync_sessions=True)
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10))
    sessions(desk / "profiles/work", ("20260102_090000_bbbbbb", "2026-01-02T09:30:00Z", 10))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    sessions(desk / "profiles/work", exit=3)
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10),
             ("20260105_090000_eeeeee", "2026-01-05T09:30:00Z", 10))
    pushed = roam(desk, "push", "--json")
    assert archive_paths(pushed) == [
        f"archive/sessions/{device_id(desk)}/default/20260105_090000_eeeeee.md"]
    assert pushed["removed"] == []                               # work's archive kept
    assert any("profile work exited with code 3" in note for note in pushed["notes"])
    text = roam(desk, "push")
    assert "nothing to push" in text


def test_a_hanging_export_is_killed_at_its_timeout(
        stand_in: Path, homes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    desk = homes("desk", sync_sessions=True)
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10), sleep=60)
    (desk / "memories").mkdir()
    (desk / "memories/MEMORY.md").write_text("still pushed\n")
    monkeypatch.setattr(sessions_tier, "EXPORT_TIMEOUT", 1.0)
    roam(desk, "init", "--create-remote")
    pushed = roam(desk, "push", "--json")
    assert "memories/MEMORY.md" in pushed["added"] and archive_paths(pushed) == []
    assert any("profile default timed out" in note for note in pushed["notes"])
    pid = json.loads((desk / "stand-in-seen.json").read_text())["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_without_hermes_the_push_goes_on_and_says_so(
        homes: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert not (Path(sys.executable).parent / "hermes").exists()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    desk = homes("desk", sync_sessions=True)
    (desk / "SOUL.md").write_text("soul\n")
    roam(desk, "init", "--create-remote")
    code, out, err = roam_inprocess(desk, "push")
    assert code == 0, err
    assert "Hermes is not installed here" in out and "pushed generation 1" in out


def test_namespaces_of_other_devices_are_never_replaced(stand_in: Path, homes: Any) -> None:
    desk = homes("desk", sync_sessions=True)
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    # A laptop whose rules share an archive/ folder of its home, holding a file that
    # impersonates the desk's archive, and sessions of its own.
    laptop = homes("laptop", sync_sessions=True)
    (laptop / "roam").mkdir()
    (laptop / "roam/rules.yaml").write_text("shared: [archive/]\n")
    fake = laptop / f"archive/sessions/{device_id(desk)}/default/20260101_090000_aaaaaa.md"
    fake.parent.mkdir(parents=True)
    fake.write_text("forged\n")
    sessions(laptop, ("20260102_090000_bbbbbb", "2026-01-02T09:30:00Z", 10))
    roam(laptop, "init")
    roam(laptop, "pull", "--apply")
    pushed = roam(laptop, "push", "--json")
    assert archive_paths(pushed) == [
        f"archive/sessions/{device_id(laptop)}/default/20260102_090000_bbbbbb.md"]
    assert pushed["removed"] == [] and pushed["changed"] == []
    # The desk's own namespace is intact: nothing for it to pull back or re-push.
    plan = roam(desk, "pull", "--json")
    assert [(r["name"], r["device"], r["action"]) for r in plan["session_archive"]] == [
        ("laptop", device_id(laptop), "added")]
    assert plan["removed"] == [] and plan["changed"] == []


def test_pull_lands_read_only_copies_and_follows_the_owner(stand_in: Path, homes: Any) -> None:
    desk = homes("desk", sync_sessions=True, sessions_max_mb=0.0007)   # room for one
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 300))
    roam(desk, "init", "--create-remote")
    roam(desk, "push")
    laptop = homes("laptop", sync_sessions=True)
    off = homes("off")                                              # sync_sessions off
    for home in (laptop, off):
        roam(home, "init")
    plan_off = roam(off, "pull", "--apply", "--json")
    assert plan_off["session_archive"] == []
    assert {"path": f"archive/sessions/{device_id(desk)}/", "reason": "session archive: "
            "sync_sessions is "
            "off on this device"} in plan_off["kept_local_by_rules"]
    assert not (off / "roam/session-archive").exists()
    roam(laptop, "pull", "--apply")
    copy = laptop / f"roam/session-archive/{device_id(desk)}/default/20260101_090000_aaaaaa.md"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o444
    assert "x" * 300 in copy.read_text()
    listed = roam(laptop, "sessions", "--json")
    assert [(r["device"], r["profile"], r["session_id"], r["title"]) for r in listed] == [
        (device_id(desk), "default", "20260101_090000_aaaaaa",
         "title of 20260101_090000_aaaaaa")]
    # A newer session replaces it in the desk's namespace: the laptop follows.
    sessions(desk, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 300),
             ("20260109_090000_ffffff", "2026-01-09T09:30:00Z", 300))
    roam(desk, "push")
    roam(laptop, "pull", "--apply")
    assert not copy.exists()
    assert (copy.parent / "20260109_090000_ffffff.md").exists()
    # The laptop's push carries the desk's namespace and never sends its copies.
    assert roam(laptop, "push", "--json")["nothing_to_push"] is True


def test_show_prints_a_transcript_without_terminal_escapes(stand_in: Path,
                                                           homes: Any) -> None:
    laptop = homes("laptop")
    copy = laptop / "roam/session-archive/desk/work/20260101_090000_aaaaaa.md"
    copy.parent.mkdir(parents=True)
    copy.write_text('---\ntitle: "evil \\u001b[31mred"\n---\nhello \x1b]0;owned\x07 there\n')
    code, out, err = roam_inprocess(laptop, "sessions", "show", "desk", "work",
                                    "20260101_090000_aaaaaa")
    assert code == 0 and "hello ]0;owned there" in out and "\x1b" not in out
    listing = roam(laptop, "sessions")
    assert "desk / work:" in listing and "\x1b" not in listing
    for bad in (("..", "work", "x"), ("desk", "work", "../../../config.yaml"),
                ("desk", "work", "nope")):
        code, out, err = roam_inprocess(laptop, "sessions", "show", *bad)
        assert code == 1 and err.count("\n") == 1 and "Traceback" not in err


def test_the_slash_form_only_lists(homes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_core.hermes import slash

    laptop = homes("laptop")
    copy = laptop / "roam/session-archive/desk/default/20260101_090000_aaaaaa.md"
    copy.parent.mkdir(parents=True)
    copy.write_text('---\ntitle: "planning"\nended_at: "2026-01-01T09:30:00Z"\n---\n'
                    "TRANSCRIPT-BODY\n")
    plan = slash.plan("sessions")
    assert plan is not None and plan.argv == ("sessions",)
    with pytest.raises(slash.SlashUsageError):
        slash.plan("sessions show desk default 20260101_090000_aaaaaa")
    monkeypatch.setenv("HERMES_HOME", str(laptop))
    text = slash.handle("sessions")
    assert "device=desk" in text and "title=planning" in text
    assert "TRANSCRIPT-BODY" not in text


def test_two_devices_with_one_host_name_keep_both_archives(
        stand_in: Path, homes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cloned machines share a host name: the second push once removed the first's sessions."""
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "box")
    first = homes("first", sync_sessions=True, device_name=None)
    sessions(first, ("20260101_090000_aaaaaa", "2026-01-01T09:30:00Z", 10),
             ("20260101_100000_cccccc", "2026-01-01T10:30:00Z", 10))
    roam(first, "init", "--create-remote")
    roam(first, "push")
    second = homes("second", sync_sessions=True, device_name=None)
    sessions(second, ("20260102_090000_bbbbbb", "2026-01-02T09:30:00Z", 10))
    roam(second, "init")
    roam(second, "pull", "--apply")
    pushed = roam(second, "push", "--json")
    assert pushed["removed"] == []
    assert len(archive_paths(pushed)) == 1
    plan = roam(first, "pull", "--json")
    assert plan["removed"] == [] and len(plan["session_archive"]) == 1
