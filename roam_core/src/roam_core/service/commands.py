"""roam's command tree as a face-neutral contract: how `hermes roam …` mounts the CLI's verbs.

The argument tree and its dispatch table are the `roam` CLI's (`roam_core.cli.main`);
`hermes roam …` is the same command inside Hermes and must parse, print and exit exactly as
`roam` does. Neither face imports the other: the CLI publishes its tree under the
`roam.commands` entry point (roam_core's pyproject), the way roam publishes itself to Hermes
under `hermes_agent.plugins`, and the Hermes face asks this module for whatever fills the
`CommandTree` contract. An installation without the CLI simply has no `hermes roam`.
"""

from __future__ import annotations

import argparse
import functools
from importlib.metadata import entry_points
from typing import Protocol, cast

from roam_core.errors import RoamError

#: The entry point group and name the CLI publishes its command tree under.
GROUP = "roam.commands"
NAME = "roam"


class CommandTree(Protocol):
    """What a face needs to mount roam's verbs under its own parser and run them."""

    def add_verbs(self, parser: argparse.ArgumentParser) -> None:
        """Add the global options and every verb (each sets `func`) to `parser`."""

    def run(self, args: argparse.Namespace) -> int:
        """Run a parsed verb under roam's error policy; the exit code (help when no verb)."""


class NoCommandTree(RoamError):
    """No distribution publishes roam's command tree (the CLI is not installed)."""


@functools.cache  # looked up once: `hermes roam` mounts it and then runs a verb from it
def command_tree() -> CommandTree:
    """The installed command tree (`roam.commands` / `roam`).

    Raises:
        NoCommandTree: when nothing publishes it.
    """
    found = entry_points(group=GROUP, name=NAME)
    if not found:
        raise NoCommandTree(f"no {GROUP} entry point named {NAME}: the roam CLI is not "
                            "installed")
    return cast(CommandTree, next(iter(found)).load())
