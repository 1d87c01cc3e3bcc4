"""The Hermes plugin's `register(ctx)`: `hermes roam`, `/roam`, three tools, hooks, a skill.

Hermes loads this module through the entry point `roam` (group `hermes_agent.plugins`)
once `hermes plugins enable roam` has run. Each registration is attempted on its own, so
one that a Hermes version lacks or rejects is logged and the others still work.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("roam.hermes")

class HermesContext(Protocol):
    """The parts of Hermes's PluginContext (0.19) that `register` uses."""

    manifest: Any  # Hermes's own record; `host.fill_manifest` fills what it lacks

    def register_cli_command(self, name: str, help: str,
                             setup_fn: Callable[[argparse.ArgumentParser], None],
                             handler_fn: Callable[[argparse.Namespace], None],
                             description: str = "") -> None: ...

    def register_command(self, name: str, handler: Callable[[str], str],
                         description: str = "", args_hint: str = "") -> None: ...

    def register_tool(self, name: str, toolset: str, schema: dict[str, Any],
                      handler: Callable[..., str], description: str = "",
                      emoji: str = "") -> None: ...

    def register_hook(self, hook_name: str, callback: Callable[..., object]) -> None: ...

    def register_skill(self, name: str, path: Path, description: str = "") -> None: ...


#: Where each verb's function goes instead of `func`, which Hermes owns for `hermes roam`.
VERB_FUNC = "roam_func"


def metadata() -> dict[str, Any]:
    """The metadata in plugin.yaml (description carries the data-handling disclosure)."""
    import yaml

    from roam_core.hermes.host import plugin_dir

    data = yaml.safe_load((plugin_dir() / "plugin.yaml").read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _move_verb_funcs(parser: argparse.ArgumentParser) -> None:
    # Hermes dispatches `args.func(args)` and ignores its result; keeping each verb's
    # function under another name routes every `hermes roam …` through `cli_handler`,
    # which applies roam's error policy and exit codes (the same `run` as `roam`).
    if "func" in parser._defaults:
        parser._defaults[VERB_FUNC] = parser._defaults.pop("func")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _move_verb_funcs(child)


def setup_cli(parser: argparse.ArgumentParser) -> None:
    """`hermes roam …`: the standalone CLI's own argparse tree (`service.commands`)."""
    from roam_core.service.commands import command_tree

    command_tree().add_verbs(parser)
    # Without a verb the nested subparsers would reset `command` to None, which Hermes
    # takes as "start a chat"; keep it "roam" so `hermes roam` prints roam's help.
    parser.set_defaults(command="roam")
    _move_verb_funcs(parser)


def cli_handler(args: argparse.Namespace) -> None:
    """Run the parsed verb as `roam` runs it (the command tree's `run`); exit with its code."""
    from roam_core.service.commands import command_tree

    args.func = getattr(args, VERB_FUNC, None)
    code = command_tree().run(args)
    if code:
        sys.exit(code)


def _install_secret_provider() -> None:
    from roam_core import secrets
    from roam_core.hermes.host import hermes_secret

    secrets.use_provider(hermes_secret)


def _start_mirror() -> None:
    from roam_core.hermes.host import current_home
    from roam_core.mirror.config import enabled_sinks, settings_for

    root = current_home().root
    if not enabled_sinks(settings_for(root)):
        return
    from roam_core.mirror.sender import ensure_started

    ensure_started(root)


def _attempt(what: str, step: Callable[[], object]) -> None:
    try:
        step()
    except Exception as failure:
        log.warning("roam: could not register %s: %s", what, failure)


def _register_cli(ctx: HermesContext) -> None:
    from roam_core.service.commands import command_tree

    command_tree()  # no CLI installed: say so here, not when Hermes builds its parser
    ctx.register_cli_command(
        "roam", "Sync this home with your other machines (roam)", setup_cli, cli_handler,
        description="roam: end-to-end encrypted sync of this Hermes home through storage "
                    "you own. Same verbs as the `roam` command.")


def register(ctx: HermesContext) -> None:
    """Called by Hermes with its PluginContext."""
    from roam_core.hermes import hooks, slash, tools
    from roam_core.hermes.host import fill_manifest, plugin_dir

    _attempt("metadata", lambda: fill_manifest(ctx.manifest, metadata()))
    _attempt("the secret provider", _install_secret_provider)
    _attempt("hermes roam", partial(_register_cli, ctx))
    _attempt("/roam", lambda: ctx.register_command(
        "roam", slash.handle, description="roam sync: status, push, pull, diff, devices…",
        args_hint="status|push|pull|pull apply|diff|devices|sessions|auto|doctor|history"))
    for schema in tools.SCHEMAS:
        name = schema["name"]
        _attempt(name, partial(ctx.register_tool, name=name, toolset=tools.TOOLSET,
                               schema=schema, handler=tools.HANDLERS[name],
                               description=schema["description"], emoji="🔄"))
    for hook, callback in hooks.callbacks().items():
        _attempt(hook, partial(ctx.register_hook, hook, callback))
    _attempt("the roam-setup skill", lambda: ctx.register_skill(
        "roam-setup", plugin_dir() / "skills" / "roam-setup" / "SKILL.md",
        description="Set up roam: archive key, backend, init, doctor, push and pull."))
    _attempt("the session mirror", _start_mirror)
