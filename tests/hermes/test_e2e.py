"""The roam plugin inside the real Hermes Agent 0.19, offline against the stub model.

Each test drives the real `hermes` binary from the cached test environment
(support.hermes_env) in fresh homes that share one local store. A turn takes 2–5 s.
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

NOTICE_MARK = "[roam]"


@pytest.fixture
def fleet(hermes_homes: HomeFactory, tmp_path: Path) -> Any:
    """`fleet(name, **settings)`: a Hermes home with roam enabled, on one local store."""
    key = os.urandom(32).hex()
    store = tmp_path / "store"

    def make(name: str, **settings: Any) -> HermesHome:
        home = hermes_homes.new(name)
        home.write_dotenv(ROAM_ARCHIVE_KEY=key)
        home.set_roam_settings(device_name=name, backend="local", local_dir=str(store),
                               **settings)
        return home

    return make


def ok(result: Any) -> Any:
    assert result.returncode == 0, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def write(home: HermesHome, rel: str, text: str) -> None:
    path = home.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_plugin_is_listed_and_enabled(hermes_homes: HomeFactory) -> None:
    listed = json.loads(ok(hermes_homes.new("listed").hermes("plugins", "list", "--json")).stdout)
    entries = listed if isinstance(listed, list) else listed.get("plugins", [])
    roam = [entry for entry in entries if entry.get("name") == "roam"]
    assert len(roam) == 1, entries
    assert roam[0]["status"] == "enabled"
    assert roam[0]["source"] == "entrypoint" and roam[0]["version"] == "0.1.0"
    plain = hermes_homes.new("plain", enable_roam=False)
    listed = json.loads(ok(plain.hermes("plugins", "list", "--json")).stdout)
    entries = listed if isinstance(listed, list) else listed.get("plugins", [])
    assert [e["status"] for e in entries if e.get("name") == "roam"] == ["not enabled"]


def test_hermes_roam_is_the_roam_cli(hermes_homes: HomeFactory, stub_model: StubModel) -> None:
    home = hermes_homes.new("cli")
    listing = ok(home.roam("plugins", "list"))
    assert "hermes-rules" in listing.stdout and "roam-backend-local" in listing.stdout
    as_json = json.loads(ok(home.roam("backends", "list", "--json")).stdout)
    assert "local" in {row["name"] for row in as_json}
    mark = stub_model.mark()
    bare = home.roam()
    assert bare.returncode == 1 and "usage: roam" in bare.stdout
    assert stub_model.chat_requests(since=mark) == []     # not mistaken for a chat
    wrong = home.roam("no-such-verb")
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr
    refused = home.roam("auto", "on")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "roam: roam is not set up in this home yet: run " \
                                     "`roam init` first"


def test_a_turn_runs_with_roam_enabled(hermes_homes: HomeFactory,
                                       stub_model: StubModel) -> None:
    home = hermes_homes.new("turn")
    mark = stub_model.mark()
    result = ok(home.oneshot("hello from the test"))
    assert result.stdout.strip() == "STUB-REPLY: hello from the stub"
    assert stub_model.user_messages(since=mark) == ["hello from the test"]


def test_a_hook_raising_inside_roam_does_not_break_the_turn(
        fleet: Any, stub_model: StubModel, tmp_path: Path) -> None:
    home = fleet("raising", auto_push=True, auto_pull_shared=True, push_debounce_seconds=0)
    ok(home.roam("init", "--create-remote"))
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(
        "import roam_core.hermes.autosync as auto\n"
        "def boom(*args, **kwargs):\n"
        "    raise RuntimeError('injected by the test')\n"
        "auto.session_start = auto.session_end = auto.first_turn_context = boom\n"
        "auto.finalize = boom\n")
    mark = stub_model.mark()
    result = home.chat("still answered?", env=home.env(PYTHONPATH=str(inject)))
    ok(result)
    assert "STUB-REPLY: hello from the stub" in result.stdout
    assert stub_model.user_messages(since=mark) == ["still answered?"]
    log = home.log_text()
    for hook in ("on_session_start", "pre_llm_call", "on_session_end"):
        assert f"roam: {hook} hook failed: injected by the test" in log


def test_two_homes_sync_through_hermes_roam(fleet: Any) -> None:
    a, b = fleet("desk"), fleet("laptop")
    ok(a.roam("init", "--create-remote"))
    write(a, "SOUL.md", "You are the desk's agent.\n")
    write(a, "memories/MEMORY.md", "the user prefers tea\n")
    pushed = json.loads(ok(a.roam("push", "--json")).stdout)
    assert pushed["generation"] == 1
    ok(b.roam("init"))
    plan = ok(b.roam("pull"))
    assert "SOUL.md" in plan.stdout
    # Hermes seeded its own SOUL.md in the new home: kept local, exit 2 through Hermes.
    first = b.roam("pull", "--apply")
    assert first.returncode == 2 and "kept local" in first.stdout
    assert (b.path / "memories/MEMORY.md").read_text() == "the user prefers tea\n"
    ok(b.roam("pull", "--apply", "--overwrite-conflicts"))
    assert (b.path / "SOUL.md").read_text() == "You are the desk's agent.\n"
    assert (b.path / "memories/MEMORY.md").read_text() == "the user prefers tea\n"
    status = json.loads(ok(b.roam("status", "--json")).stdout)
    assert status["remote_ahead"] is False
    dirty = {path for paths in status["changes"].values() for path in paths}
    assert not dirty & {"SOUL.md", "memories/MEMORY.md"}, status["changes"]
    # Both change; the second push is refused with exit code 2 through Hermes too.
    write(b, "memories/MEMORY.md", "the user prefers coffee\n")
    ok(b.roam("push"))
    write(a, "memories/USER.md", "name: Sam\n")
    conflict = a.roam("push")
    assert conflict.returncode == 2, conflict.stderr


def test_auto_push_happens_after_a_turn(fleet: Any) -> None:
    a = fleet("auto-desk")
    ok(a.roam("init", "--create-remote"))
    switched = ok(a.roam("auto", "on"))
    assert "auto sync on" in switched.stdout
    # Inside a profile, HERMES_HOME is the profile home; roam maps it to the root, and
    # switching auto sync is refused there.
    ok(a.hermes("profile", "create", "work", "--clone", "--no-alias"))
    from_profile = a.hermes("-p", "work", "roam", "auto", "off")
    assert from_profile.returncode == 1 and "root home" in from_profile.stderr
    assert json.loads(ok(a.hermes("-p", "work", "roam", "auto", "status", "--json"))
                      .stdout)["auto_push"] is True
    ok(a.roam("config", "set", "push_debounce_seconds", "0"))
    write(a, "memories/MEMORY.md", "written before the turn\n")
    ok(a.chat("remember this"))
    history = json.loads(ok(a.roam("history", "--json")).stdout)
    assert max(row["generation"] for row in history) == 1
    status = json.loads(ok(a.roam("status", "--json")).stdout)
    assert status["dirty"] == 0 and status["local_generation"] == 1
    auto = json.loads(ok(a.roam("auto", "status", "--json")).stdout)
    assert auto["last_auto_push"] and auto["pending_failed_push"] is None


def test_remote_ahead_notice_is_injected_once(fleet: Any, stub_model: StubModel) -> None:
    desk, laptop = fleet("notice-desk"), fleet("notice-laptop")
    ok(desk.roam("init", "--create-remote"))
    write(desk, "skins/dark.yaml", "name: dark\n")
    ok(desk.roam("push"))
    ok(laptop.roam("init"))
    ok(laptop.roam("auto", "on"))
    mark = stub_model.mark()
    ok(laptop.chat("first turn"))
    ok(laptop.chat("second turn"))
    ok(laptop.chat("third turn"))
    messages = stub_model.user_messages(since=mark)
    assert [m.split("\n\n")[0] for m in messages] == ["first turn", "second turn", "third turn"]
    ahead = [m for m in messages if "has changes this machine has not pulled" in m]
    assert len(ahead) == 1, messages             # once, not again while nothing new arrived
    assert "/roam pull" in ahead[0] and NOTICE_MARK in ahead[0]
    # The laptop's automatic push after turn 1 was refused (remote ahead): said once.
    failed = [m for m in messages if "last automatic roam push failed" in m]
    assert len(failed) == 1 and "pull" in failed[0]


def _tool_result(stub: StubModel, mark: int, name: str) -> dict[str, Any]:
    results = [r for r in stub.tool_results(since=mark)]
    assert results, "Hermes sent no tool result back"
    return json.loads(results[-1]["content"])


def test_tools_in_a_real_turn(fleet: Any, stub_model: StubModel) -> None:
    a = fleet("tools")
    ok(a.roam("init", "--create-remote"))
    mark = stub_model.mark()
    stub_model.queue_tool_call("roam_pull", {"apply": True})
    ok(a.oneshot("pull my changes"))
    refused = _tool_result(stub_model, mark, "roam_pull")
    assert refused["refused"] is True and "/roam pull apply" in refused["advice"]
    schemas = {tool["function"]["name"]: tool["function"]
               for tool in stub_model.chat_requests(since=mark)[0].get("tools", [])}
    assert {"roam_status", "roam_push", "roam_pull"} <= set(schemas)
    assert "DESTRUCTIVE" in schemas["roam_pull"]["description"]

    ok(a.roam("config", "set", "allow_agent_apply", "true"))
    mark = stub_model.mark()
    stub_model.queue_tool_call("roam_pull", {"apply": True})
    ok(a.oneshot("pull my changes now"))
    allowed = _tool_result(stub_model, mark, "roam_pull")
    assert "refused" not in allowed and allowed["ok"] is True, allowed

    mark = stub_model.mark()
    stub_model.queue_tool_call("roam_status", {})
    ok(a.oneshot("are we in sync?"))
    status = _tool_result(stub_model, mark, "roam_status")
    assert status["ok"] is True and status["remote_ahead"] is False
    assert status["result"]["reachable"] is True


INSIDE_HERMES = r"""
import json
from hermes_cli.plugins import discover_plugins, get_plugin_manager
discover_plugins()
manager = get_plugin_manager()
loaded = manager._plugins["roam"]
handler = manager._plugin_commands["roam"]["handler"]
# Hermes has not loaded the home's .env yet: roam reads its own ROAM_* secrets from the
# root home's .env itself (docs/security.md, Keys), so profiles and early hooks work too.
before_env = handler("status")
from hermes_cli.env_loader import load_hermes_dotenv
load_hermes_dotenv()
from tools.registry import registry
print(json.dumps({
    "enabled": loaded.enabled, "error": loaded.error,
    "description": loaded.manifest.description, "version": loaded.manifest.version,
    "hooks": sorted(loaded.hooks_registered), "tools": sorted(loaded.tools_registered),
    "skills": sorted(manager._plugin_skills),
    "registry": sorted(n for n in ("roam_status", "roam_push", "roam_pull")
                       if registry.get_entry(n) is not None),
    "help": handler(""), "auto": handler("auto"), "bad": handler("auto on"),
    "status": handler("status"), "before_env": before_env,
}))
"""


def test_inside_hermes_registrations_and_slash_handler(fleet: Any) -> None:
    home = fleet("inside")
    ok(home.roam("init", "--create-remote"))
    result = ok(home.hermes_python("-c", INSIDE_HERMES))
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["enabled"] is True and seen["error"] is None
    assert seen["version"] == "0.1.0" and "never uploaded" in seen["description"]
    assert seen["hooks"] == sorted(["on_session_start", "pre_llm_call", "post_llm_call",
                                    "on_session_end", "on_session_finalize"])
    assert seen["tools"] == seen["registry"] == ["roam_pull", "roam_push", "roam_status"]
    assert seen["skills"] == ["roam:roam-setup"]
    assert "/roam pull apply" in seen["help"]
    assert "auto_push: no" in seen["auto"]
    assert seen["bad"].startswith("roam: /roam auto takes no further words")
    assert "reachable: yes" in seen["before_env"] and "(exit 1)" not in seen["before_env"]
    assert "reachable: yes" in seen["status"] and "remote_ahead: no" in seen["status"]
    assert "│" not in seen["status"] and "  " not in seen["status"]
