"""`roam mirror status|flush|backfill` run as a user would, against the server's socket."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mirror.fake_hermes import write_fake_agent
from mirror.statedb import StateDB

from roam_core.mirror.events import TurnEvent, make_live_event
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


def _turn(session: str, number: int) -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=f"{session} q{number}", reply="a",
                           title=f"T {session}").with_text(redacted=True)


def test_a_locked_thread_does_not_block_the_other_sessions(root: Path, server: DiscordServer,
                                                           env: dict[str, str]) -> None:
    write_config(root, server)
    Spool(root).append_many([_turn("a", 1), _turn("b", 1)])
    assert run_roam("--home", str(root), "mirror", "flush", env=env).returncode == 0
    locked = next(t.id for t in server.threads.values() if t.name.startswith("T a"))
    server.lock_thread(locked)
    Spool(root).append_many([_turn("a", 2), _turn("b", 2)])
    flush = run_roam("--home", str(root), "mirror", "flush", env=env)
    assert flush.returncode == 0, flush.stdout + flush.stderr
    assert "Delivered 2 turn(s); 0 still pending." in flush.stdout
    assert len(server.threads) == 3 and len(server.messages_in(locked)) == 1


def test_given_up_turns_are_listed_and_retried(root: Path, server: DiscordServer,
                                               env: dict[str, str]) -> None:
    write_config(root, server)
    Spool(root).append(_turn("a", 1))
    server.inject(400, count=3, path_contains="/messages")
    for _ in range(3):
        run_roam("--home", str(root), "mirror", "flush", env=env)
    status = run_roam("--home", str(root), "mirror", "status", env=env)
    assert "given up" in status.stdout and "gave up on t" in status.stdout, status.stdout
    assert "(400" in status.stdout and "roam mirror retry" in status.stdout
    assert server.messages_total() == 0
    retry = run_roam("--home", str(root), "mirror", "retry", env=env)
    assert retry.returncode == 0, retry.stdout + retry.stderr
    assert "1 given-up turn(s) back in line" in retry.stdout and "Delivered 1" in retry.stdout
    assert server.messages_total() == 1
    unknown = run_roam("--home", str(root), "mirror", "retry", "tnosuchturn", env=env)
    assert unknown.returncode == 1 and "not given up" in unknown.stderr


def test_status_shows_a_global_429_and_flush_honours_it(root: Path, server: DiscordServer,
                                                        env: dict[str, str]) -> None:
    write_config(root, server)
    Spool(root).append(_turn("a", 1))
    server.inject(429, retry_after=40, global_=True)
    first = run_roam("--home", str(root), "mirror", "flush", env=env)
    assert first.returncode == 1 and "global rate limit" in first.stdout
    asked = len(server.requests)
    status = run_roam("--home", str(root), "mirror", "status", env=env)
    assert "retrying" in status.stdout and "global rate limit" in status.stdout
    assert "s ago)" in status.stdout and "next try in" in status.stdout
    second = run_roam("--home", str(root), "mirror", "flush", env=env)
    assert second.returncode == 1 and "asked to wait" in second.stdout
    assert len(server.requests) == asked  # nothing sent while Discord said wait
    state_path = Spool(root).state_path  # as if the 40 s had passed
    state = json.loads(state_path.read_text())
    state["sinks"]["discord"].update(asked_until=0, backoff_until=0)
    state_path.write_text(json.dumps(state))
    assert run_roam("--home", str(root), "mirror", "flush", env=env).returncode == 0
    report = json.loads(run_roam("--home", str(root), "mirror", "status", "--json",
                                 env=env).stdout)
    assert report["sinks"][0]["last_error"] == "" and report["sinks"][0]["status"] == "ok"
