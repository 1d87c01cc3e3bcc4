"""The `roam` entry point: one argparse tree, one error policy, exit codes 0 / 1 / 2."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from roam_core import __version__
from roam_core.cli.output import error
from roam_core.errors import RoamError

#: Modules under `roam_core.cli` that add verbs; each has `register(subparsers)`.
COMMAND_MODULES = ("listing", "rules", "demo", "config", "sync", "pull", "doctor", "auto", "mirror",
                   "check", "sessions")


def build_parser(prog: str = "roam") -> argparse.ArgumentParser:
    """The whole command tree; `hermes roam` mounts the same subcommands."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Keep a Hermes Agent home in sync between your machines, end-to-end "
        "encrypted, through storage you own.",
    )
    parser.add_argument("--version", action="version", version=f"roam {__version__}")
    add_verbs(parser)
    return parser


def add_verbs(parser: argparse.ArgumentParser) -> None:
    """Add the global options and every verb to `parser`."""
    parser.add_argument("--home", metavar="DIR",
                        help="the Hermes home (default: $HERMES_HOME, else ~/.hermes)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"roam_core.cli.{name}").register(subparsers)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command under the error policy; returns the exit code."""
    func = getattr(args, "func", None)
    if func is None:
        build_parser().print_help()
        return 1
    try:
        return int(func(args) or 0)
    except RoamError as failure:
        error(str(failure))
        return failure.exit_code
    except OSError as failure:  # the machine said no (full disk, permissions): not a bug
        where = f": {failure.filename}" if failure.filename else ""
        error(f"{failure.strerror or failure}{where}")
        return 1
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:  # answered before any command module is imported
        print(f"roam {__version__}")
        return 0
    parser = build_parser()
    args = parser.parse_args(words)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="roam: %(message)s")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
