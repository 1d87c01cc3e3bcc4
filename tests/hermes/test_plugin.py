"""`register(ctx)` against a recording context shaped like Hermes 0.19's PluginContext.

The real Hermes is exercised in test_e2e.py; these tests pin what register() hands it.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import roam_core
from roam_core import secrets
from roam_core.hermes import hooks, host, plugin, tools
from support.inprocess import run_verb

PLUGIN_DIR = Path(plugin.__file__).parent
#: Attributes Hermes's own main() reads from the parsed namespace after argparse.
HERMES_DESTS = {"version", "yolo", "oneshot", "resume", "continue_last", "tui", "worktree",
                "query", "model", "provider", "toolsets", "func"}


class RecordingContext:
    """Records registrations with the signatures of Hermes 0.19's PluginContext."""

    def __init__(self) -> None:
        self.manifest = types.SimpleNamespace(name="roam", version="", description="",
                                              author="", provides_hooks=[], provides_tools=[],
                                              source="entrypoint")
        self.cli: dict[str, dict[str, Any]] = {}
        self.commands: dict[str, dict[str, Any]] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.hooks: dict[str, list[Callable[..., Any]]] = {}
        self.skills: dict[str, Path] = {}

    def register_cli_command(self, name: str, help: str, setup_fn: Callable[..., Any],
                             handler_fn: Callable[..., Any] | None = None,
                             description: str = "") -> None:
        self.cli[name] = {"help": help, "setup_fn": setup_fn, "handler_fn": handler_fn}

    def register_command(self, name: str, handler: Callable[..., Any], description: str = "",
                         args_hint: str = "") -> None:
        self.commands[name] = {"handler": handler, "args_hint": args_hint}

    def register_tool(self, name: str, toolset: str, schema: dict[str, Any],
                      handler: Callable[..., Any], check_fn: Any = None,
                      requires_env: Any = None, is_async: bool = False, description: str = "",
                      emoji: str = "", override: bool = False) -> None:
        self.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler,
                            "override": override}

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        self.hooks.setdefault(hook_name, []).append(callback)

    def register_skill(self, name: str, path: Path, description: str = "") -> None:
        assert path.exists()
        self.skills[name] = path


@pytest.fixture
def ctx() -> Iterator[RecordingContext]:
    context = RecordingContext()
    plugin.register(context)
    yield context
    secrets.use_provider(None)


def hermes_parser(ctx: RecordingContext) -> argparse.ArgumentParser:
    """The parser shape Hermes builds for a plugin CLI command (hermes_cli/main.py)."""
    top = argparse.ArgumentParser(prog="hermes")
    top.add_argument("--version", "-V", action="store_true")
    sub = top.add_subparsers(dest="command")
    info = ctx.cli["roam"]
    roam_parser = sub.add_parser("roam", help=info["help"])
    info["setup_fn"](roam_parser)
    roam_parser.set_defaults(func=info["handler_fn"])
    return top


def test_register_everything(ctx: RecordingContext) -> None:
    assert set(ctx.cli) == {"roam"} and set(ctx.commands) == {"roam"}
    assert set(ctx.tools) == {"roam_status", "roam_push", "roam_pull"}
    assert all(t["toolset"] == "roam" and t["override"] is False for t in ctx.tools.values())
    assert set(ctx.hooks) == {"on_session_start", "pre_llm_call", "post_llm_call",
                              "on_session_end", "on_session_finalize"}
    assert all(len(callbacks) == 1 for callbacks in ctx.hooks.values())
    assert ctx.skills["roam-setup"].name == "SKILL.md"
    assert secrets.in_hermes()


def test_metadata_matches_what_is_registered(ctx: RecordingContext) -> None:
    meta = yaml.safe_load((PLUGIN_DIR / "plugin.yaml").read_text())
    assert meta["name"] == "roam"
    assert meta["version"] == roam_core.__version__
    assert meta["requires_hermes"] == ">=0.19"
    assert "manifest_version" not in meta      # 0.19's installer refuses versions > 1
    assert sorted(meta["provides_tools"]) == sorted(ctx.tools)
    assert sorted(meta["provides_hooks"]) == sorted(ctx.hooks)
    assert "never uploaded" in meta["description"] and "encrypted" in meta["description"]
    assert ctx.manifest.version == roam_core.__version__
    assert ctx.manifest.description == meta["description"]
    assert ctx.manifest.provides_tools == meta["provides_tools"]


def test_no_memory_provider_words() -> None:
    # Hermes classifies a module mentioning them as an exclusive memory provider.
    for name in ("__init__.py", "plugin.py"):
        text = (PLUGIN_DIR / name).read_text()
        assert "register_memory_provider" not in text and "MemoryProvider" not in text


def test_skill_frontmatter() -> None:
    text = (PLUGIN_DIR / "skills" / "roam-setup" / "SKILL.md").read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert front["name"] == "roam-setup" and front["description"]
    for step in ("ROAM_ARCHIVE_KEY", "roam init", "roam doctor", "roam push",
                 "roam pull --apply", "backends list"):
        assert step in text


def test_hermes_roam_parses_with_the_same_tree(ctx: RecordingContext) -> None:
    parser = hermes_parser(ctx)
    args = parser.parse_args(["roam", "push", "--force", "--json"])
    assert args.func is plugin.cli_handler
    assert args.command == "push" and args.force and args.json
    assert callable(getattr(args, plugin.VERB_FUNC))
    bare = parser.parse_args(["roam"])
    assert bare.command == "roam"            # not None: Hermes would start a chat
    assert bare.func is plugin.cli_handler and not hasattr(bare, plugin.VERB_FUNC)


def test_hermes_roam_finds_the_cli_through_its_entry_point() -> None:
    """`hermes roam` mounts what the `roam.commands` entry point publishes: the CLI's tree."""
    from roam_core.cli import main as cli_main
    from roam_core.service.commands import command_tree

    assert command_tree() is cli_main


def test_without_the_cli_everything_else_still_registers(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from roam_core.service import commands

    monkeypatch.setattr(commands, "entry_points", lambda **_: ())
    commands.command_tree.cache_clear()
    context = RecordingContext()
    try:
        plugin.register(context)
    finally:
        commands.command_tree.cache_clear()
        secrets.use_provider(None)
    assert context.cli == {}
    assert "could not register hermes roam" in caplog.text
    assert set(context.commands) == {"roam"}
    assert set(context.tools) == {"roam_status", "roam_push", "roam_pull"}


def test_no_verb_reuses_a_dest_hermes_reads(ctx: RecordingContext) -> None:
    parser = hermes_parser(ctx)
    roam_parser = parser._subparsers._group_actions[0].choices["roam"]  # type: ignore[union-attr]
    clashes: list[str] = []

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for action in p._actions:
            if action.dest in HERMES_DESTS:
                clashes.append(f"{path}: {action.dest}")
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
    walk(roam_parser, "roam")
    assert clashes == []


def test_cli_handler_exit_codes(ctx: RecordingContext, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    parser = hermes_parser(ctx)
    home = tmp_path / "h"
    home.mkdir()
    ok = parser.parse_args(["roam", "--home", str(home), "auto", "status", "--json"])
    assert ok.func(ok) is None
    assert '"auto_push": false' in capsys.readouterr().out
    refused = parser.parse_args(["roam", "--home", str(home), "auto", "on"])
    with pytest.raises(SystemExit) as stop:
        refused.func(refused)
    assert stop.value.code == 1
    assert capsys.readouterr().err.startswith("roam: roam is not set up")
    bare = parser.parse_args(["roam"])
    with pytest.raises(SystemExit) as stop:
        bare.func(bare)
    assert stop.value.code == 1
    assert "usage: roam" in capsys.readouterr().out


def test_slash_and_tools_are_the_registered_handlers(ctx: RecordingContext) -> None:
    from roam_core.hermes import slash

    assert ctx.commands["roam"]["handler"] is slash.handle
    assert ctx.tools["roam_pull"]["handler"] is tools.roam_pull
    assert ctx.tools["roam_pull"]["schema"] is tools.PULL_SCHEMA


def test_hooks_take_kwargs_and_never_raise(ctx: RecordingContext,
                                           monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    from roam_core.hermes import autosync

    def explode(*args: object) -> None:
        raise RuntimeError("injected failure")

    for name in ("session_start", "session_end", "first_turn_context", "finalize"):
        monkeypatch.setattr(autosync, name, explode)
    kwargs = {"session_id": "s1", "is_first_turn": True,
              "telemetry_schema_version": "hermes.observer.v1", "unexpected": object()}
    for name, callbacks in ctx.hooks.items():
        assert callbacks[0](**kwargs) is None, name
    assert "roam: pre_llm_call hook failed: injected failure" in caplog.text
    assert "roam: on_session_end hook failed: injected failure" in caplog.text


def test_first_turn_fallback_without_is_first_turn() -> None:
    assert hooks._first_turn({"session_id": "fallback-1"}) is True
    assert hooks._first_turn({"session_id": "fallback-1"}) is False
    assert hooks._first_turn({"session_id": "x", "is_first_turn": False}) is False


@pytest.fixture
def fake_agent(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """Stand-ins for Hermes's `agent.secret_scope` and `agent.redact` modules."""
    package = types.ModuleType("agent")
    scope = types.ModuleType("agent.secret_scope")
    redact = types.ModuleType("agent.redact")

    class UnscopedSecretError(RuntimeError):
        pass

    state = types.SimpleNamespace(scope={"ROAM_ARCHIVE_KEY": "k"}, multiplex=False,
                                  redact=redact)

    def get_secret(name: str, default: str | None = None) -> str | None:
        if state.multiplex:
            raise UnscopedSecretError(name)
        return state.scope.get(name, default)

    scope.get_secret = get_secret  # type: ignore[attr-defined]
    redact.redact_sensitive_text = (  # type: ignore[attr-defined]
        lambda text, force=False: text.replace("sk-secret", "sk-***"))
    for name, module in (("agent", package), ("agent.secret_scope", scope),
                         ("agent.redact", redact)):
        monkeypatch.setitem(sys.modules, name, module)
    return state


def test_secrets_come_from_the_hermes_scope(fake_agent: types.SimpleNamespace,
                                            tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ROAM_ARCHIVE_KEY=from-dotenv\n"
                                   "ROAM_DISCORD_BOT_TOKEN=root-token\nOTHER_TOKEN=x\n")
    secrets.use_provider(host.hermes_secret)
    try:
        assert secrets.get_secret("ROAM_ARCHIVE_KEY", tmp_path) == "k"   # the scope wins
        assert secrets.get_secret("ROAM_OTHER", tmp_path) is None
        # A profile process's scope lacks the root's ROAM_* values: the root's .env has them.
        assert secrets.get_secret("ROAM_DISCORD_BOT_TOKEN", tmp_path) == "root-token"
        assert secrets.get_secret("OTHER_TOKEN", tmp_path) is None   # only ROAM_* names
        fake_agent.multiplex = True
        with pytest.raises(host.SecretScopeError, match="no Hermes secret scope"):
            secrets.get_secret("ROAM_ARCHIVE_KEY", tmp_path)
    finally:
        secrets.use_provider(None)


def test_unscoped_secret_skips_the_work(fake_agent: types.SimpleNamespace,
                                        make_home: Callable[..., Path]) -> None:
    root = make_home("a")
    assert run_verb(["init", "--create-remote"], home=root).ok
    fake_agent.multiplex = True
    secrets.use_provider(host.hermes_secret)
    try:
        result = run_verb(["push", "--json"], home=root)
    finally:
        secrets.use_provider(None)
    assert result.code == 1 and result.error_kind == "SecretScopeError"


def test_redaction_shim(fake_agent: types.SimpleNamespace) -> None:
    assert host.redact("token sk-secret") == "token sk-***"
    fake_agent.redact.redact_for_egress = lambda text: "EGRESS:" + text
    assert host.redact("x") == "EGRESS:x"

    def broken(text: str) -> str:
        raise ValueError("no patterns")

    fake_agent.redact.redact_for_egress = broken
    assert host.redact("sk-secret") == host.REDACTION_UNAVAILABLE


def test_redaction_outside_hermes_is_identity() -> None:
    assert "agent" not in sys.modules or not hasattr(sys.modules["agent"], "redact")
    assert host.redact("plain") == "plain"
