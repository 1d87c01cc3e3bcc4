"""`roam upgrade`: move the store to the current format version (see docs/format.md)."""

from __future__ import annotations

import argparse

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json


def _upgrade(args: argparse.Namespace) -> int:
    from roam_core.engine.upgrade import upgrade

    # it writes HEAD: one writer per home, as a push
    with operation(args, "push", lock=True) as session:
        result = upgrade(session)
    if args.json:
        emit_json(result.as_json())
    elif result.before == result.after:
        print(f"roam: the store is already format version {result.after}")
    else:
        print(f"roam: store upgraded from format version {result.before} to {result.after} "
              f"at generation {result.generation}; devices running an older roam now stop "
              "with an error until they are updated")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "upgrade", help="move the store to the current format version (trees in packs)",
        description="Move the store to the current format version. Format 2 stores trees "
        "in packs, so a push or a pull of a large home makes a few requests instead of one "
        "per folder. Only HEAD is written again, at the same generation; nothing is "
        "rewritten or deleted. Run it once every device runs a roam that reads format 2: "
        "an older roam stops at HEAD with an error until it is updated.")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_upgrade)
