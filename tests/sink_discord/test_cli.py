"""`roam mirror status|flush|backfill` run as a user would, against the server's socket."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mirror.fake_hermes import write_fake_agent
from mirror.statedb import StateDB

from roam_core.mirror.events import make_live_event
from roam_core.mirror.spool import Spool
from support.cli import roam_env, run_roam
from support.discord_server import DiscordServer

from .conftest import TOKEN, write_config


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A roam environment whose Python can import a Hermes-0.19-shaped agent.redact."""
    folder = write_fake_agent(tmp_path / "fake-agent")
    return roam_env(PYTHONPATH=os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))


def test_status_when_off(root: Path, env: dict[str, str]) -> None:
    result = run_roam("--home", str(root), "mirror", "status", env=env)
    assert result.returncode == 0, result.stderr
    assert "Mirror is off" in result.stdout


def test_backfill_posts_past_sessions_once(root: Path, server: DiscordServer,
                                           env: dict[str, str]) -> None:
    write_config(root, server)
    db = StateDB(root / "state.db")
    db.session("20260301_090000_aaaaaa", 1_772_355_600.0, title="Old work")
    db.turn("20260301_090000_aaaaaa", "first HERMES-ONLY-SECRET", "reply one", 1_772_355_610.0,
            with_tool=True)
    db.turn("20260301_090000_aaaaaa", "second", "reply two", 1_772_355_700.0)
    first = run_roam("--home", str(root), "mirror", "backfill", env=env)
    assert first.returncode == 0, first.stderr
    assert "2 spooled" in first.stdout and "Delivered 2" in first.stdout
    again = run_roam("--home", str(root), "mirror", "backfill", "--since", "2026-01-01",
                     env=env)
    assert again.returncode == 0 and "0 spooled, 2 already mirrored" in again.stdout
    [thread] = server.threads.values()
    assert thread.name.startswith("Old work · ")  # a per-session tag keeps names unique
    assert [m["content"] for m in thread.messages] == [
        "**You**\nfirst [hermes-redacted]\n\n**Hermes**\nreply one",
        "**You**\nsecond\n\n**Hermes**\nreply two"]
    status = run_roam("--home", str(root), "mirror", "status", "--json", env=env)
    report = json.loads(status.stdout)
    assert report["enabled"] and report["sinks"][0]["pending"] == 0


def test_backfill_without_redaction_refuses(root: Path, server: DiscordServer) -> None:
    write_config(root, server)
    StateDB(root / "state.db").session("s", 1.0)
    result = run_roam("--home", str(root), "mirror", "backfill")  # no agent.redact here
    assert result.returncode == 1
    assert result.stderr.startswith("roam: cannot backfill") and "Traceback" not in result.stderr


def test_flush_reports_a_refused_token(root: Path, server: DiscordServer,
                                       env: dict[str, str]) -> None:
    write_config(root, server)
    server.token = "another-token"
    Spool(root).append(make_live_event(session_id="s", turn_id="1", user_message="q",
                                       reply="a").with_text(redacted=True))
    flush = run_roam("--home", str(root), "mirror", "flush", env=env)
    assert flush.returncode == 1
    assert "401" in flush.stdout and "1 still pending" in flush.stdout
    status = run_roam("--home", str(root), "mirror", "status", env=env)
    assert "stopped" in status.stdout and "refused the bot token" in status.stdout
    assert TOKEN not in flush.stdout + flush.stderr + status.stdout + status.stderr
    server.token = TOKEN
    assert run_roam("--home", str(root), "mirror", "flush", env=env).returncode == 0
    assert server.messages_total() == 1


def test_bad_since_is_one_line(root: Path, server: DiscordServer, env: dict[str, str]) -> None:
    write_config(root, server)
    result = run_roam("--home", str(root), "mirror", "backfill", "--since", "soon", env=env)
    assert result.returncode == 1 and result.stderr.strip().count("\n") == 0
    assert "not a date" in result.stderr
