"""Issue 26, through the real Hermes Agent and the stub model: an automatic push that meets a
secret-looking value pushes nothing and leaves a notice for the next session naming the path
(never the value); the agent's `roam_push` tool returns the findings masked.

The secret is written by a turn's memory in a profile (`-p work`): the automatic push at that
session's end runs from the profile, covers the root home, and stops.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from support.hermes_env import HermesHome, HomeFactory
from support.stub_model import StubModel

pytestmark = pytest.mark.hermes

TOKEN = "ghp_Fake0123456789abcdefghijklmnopqrstu"
MEMORY = "profiles/work/memories/MEMORY.md"


def ok(result: Any) -> Any:
    assert result.returncode == 0, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def _store_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file())


def _tool_result(stub: StubModel, mark: int) -> dict[str, Any]:
    results = list(stub.tool_results(since=mark))
    assert results, "Hermes sent no tool result back"
    return json.loads(results[-1]["content"])


def test_auto_push_meeting_a_secret_leaves_a_notice_and_the_tool_masks_it(
        hermes_homes: HomeFactory, stub_model: StubModel, tmp_path: Path) -> None:
    store = tmp_path / "store"
    home: HermesHome = hermes_homes.new("secret-desk")
    home.write_dotenv(ROAM_ARCHIVE_KEY=os.urandom(32).hex())
    home.set_roam_settings(device_name="secret-desk", backend="local", local_dir=str(store))
    ok(home.roam("init", "--create-remote"))
    ok(home.roam("push"))
    ok(home.roam("auto", "on"))
    ok(home.roam("config", "set", "push_debounce_seconds", "0"))
    ok(home.hermes("profile", "create", "work", "--clone", "--no-alias"))
    memory = home.path / MEMORY
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text(f"the user pasted GITHUB_TOKEN={TOKEN}\n")
    before = _store_files(store)

    ok(home.hermes("-p", "work", "chat", "-q", "remember my token", "-Q"))  # ends the session
    assert _store_files(store) == before, "the automatic push uploaded something"
    auto = json.loads(ok(home.roam("auto", "status", "--json")).stdout)
    failed = json.dumps(auto["pending_failed_push"])
    assert MEMORY in failed and "secret-looking" in failed and TOKEN not in failed

    mark = after_profile_turn = stub_model.mark()
    ok(home.chat("good morning"))  # the next session's first turn carries the notice
    messages = stub_model.user_messages(since=mark)
    notices = [m for m in messages if "last automatic roam push failed" in m]
    assert len(notices) == 1 and MEMORY in notices[0], messages
    assert all(TOKEN not in m for m in messages)
    assert _store_files(store) == before  # that session's own automatic push stopped too

    mark = stub_model.mark()
    stub_model.queue_tool_call("roam_push", {})
    ok(home.oneshot("push my changes"))
    pushed = _tool_result(stub_model, mark)  # valid JSON: each string scrubbed on its own
    assert pushed["ok"] is False and pushed["exit_code"] == 1, pushed
    [finding] = pushed["result"]["secret_findings"]
    assert (finding["path"], finding["line"], finding["rule"]) == (MEMORY, 1, "github-token")
    assert TOKEN not in json.dumps(pushed)
    assert finding["excerpt"].startswith("the user pasted GITHUB_TOKEN=")  # masked by both
    # (The profile's own turn showed the model that memory: Hermes's doing, not roam's.)
    assert all(TOKEN not in json.dumps(request)
               for request in stub_model.chat_requests(since=after_profile_turn))
    assert _store_files(store) == before
