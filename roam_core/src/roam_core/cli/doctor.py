"""`roam doctor`: every check on its own line; non-zero exit when any fails."""

from __future__ import annotations

import argparse

from roam_core.cli.output import emit_json, note


def _doctor(args: argparse.Namespace) -> int:
    from roam_core.service.doctor import doctor

    record = doctor(getattr(args, "home", None), note)
    if args.json:
        emit_json(record.as_json())
    else:
        for line in record.lines():
            print(line)
    return record.exit_code


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("doctor", help="check the key, backend, HEAD and local state")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_doctor)


