"""The `roam` entry point: one argparse tree, one error policy.

Exit codes: 0 done, 1 failed (one line says why), 2 behind or conflicts kept,
64 usage error, 130 interrupted, 141 stdout closed early (`roam rules | head`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from roam_core import __version__
from roam_core.cli import output
from roam_core.cli.helptext import EXIT_CODES, GroupedHelpFormatter, decorate, grouped_verbs
from roam_core.cli.output import error
from roam_core.cli.parser import (
    EX_USAGE,
    RoamParser,
    add_global_flags,
    apply_global_json,
    spread_global_flags,
)
from roam_core.errors import RoamError, describe, describe_os_error

#: Modules under `roam_core.cli` that add verbs; each has `register(subparsers)`.
COMMAND_MODULES = ("listing", "rules", "demo", "config", "sync", "pull", "doctor", "auto", "mirror",
                   "check", "sessions", "backups", "stats", "manage", "key", "upgrade",
                   "completion")


def build_parser(prog: str = "roam") -> argparse.ArgumentParser:
    """The whole command tree; `hermes roam` mounts the same subcommands."""
    parser = RoamParser(
        prog=prog, formatter_class=GroupedHelpFormatter,
        description="Keep a Hermes Agent home in sync between your machines, end-to-end "
        "encrypted, through storage you own.",
    )
    parser.add_argument("--version", action="version", version=f"roam {__version__}")
    add_verbs(parser)
    parser.epilog = grouped_verbs(parser) + "\n\n" + EXIT_CODES
    return parser


def add_verbs(parser: argparse.ArgumentParser) -> None:
    """Add the global options and every verb to `parser`."""
    add_global_flags(parser)
    # RoamParser below whatever parser mounts us (Hermes's too): usage errors exit 64
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=RoamParser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"roam_core.cli.{name}").register(subparsers)
    spread_global_flags(parser)
    decorate(parser)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command under the error policy; returns the exit code."""
    func = getattr(args, "func", None)
    if func is None:
        build_parser().print_help()
        return 1
    problem = apply_global_json(args)
    if problem:
        error(problem)
        return EX_USAGE
    output.set_quiet(bool(getattr(args, "quiet", False)))
    try:
        code = int(func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the policy, not at exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except RoamError as failure:
        error(describe(failure))
        return failure.exit_code
    except OSError as failure:  # the machine said no (full disk, permissions): not a bug
        error(describe_os_error(failure))
        return 1
    except KeyboardInterrupt:
        error("interrupted")
        return 130


def _stdout_gone() -> int:
    """The reader left (`| head`): end quietly with git's code, 128 + SIGPIPE."""
    import os

    # Python would flush stdout again at exit and print "Exception ignored…"; point the
    # descriptor at /dev/null so that last flush has somewhere to go.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    words = list(sys.argv[1:] if argv is None else argv)
    if sys.platform == "win32":
        # roam locks with flock and installs with POSIX renames: say so before any import
        # of fcntl fails with a traceback (decision in docs/decisions.md)
        error("native Windows is not supported (roam needs POSIX file locking); use WSL")
        return 1
    if words == ["--version"]:  # answered before any command module is imported
        print(f"roam {__version__}")
        return 0
    parser = build_parser()
    args = parser.parse_args(words)
    level = (logging.ERROR if args.quiet else logging.WARNING if not args.verbose
             else logging.INFO if args.verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=level, format="roam: %(message)s")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
