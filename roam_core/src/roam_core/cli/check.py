"""`roam check [--read-data]`: verify the store; exit 1 when anything in it is wrong."""

from __future__ import annotations

import argparse

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, sanitize
from roam_core.cli.sync import _size, print_capped


def _check(args: argparse.Namespace) -> int:
    from roam_core.engine.check import check

    with operation(args, "check", lock=False) as session:
        report = check(session, read_data=args.read_data)
    if args.json:
        emit_json(report.as_json())
        return 0 if report.ok else 1
    print(f"roam: checked {sanitize(report.identity)}")
    if report.head_generation is not None:
        print(f"  HEAD: generation {report.head_generation} (floor {report.floor})")
    print(f"  snapshots: {report.snapshots}, trees: {report.trees}, file entries: {report.files}")
    print(f"  blobs: {report.blobs} referenced in {report.packs} pack(s); "
          f"{report.indexes} index(es); {report.unreferenced_packs} unreferenced pack(s)")
    if report.read_data:
        print(f"  data: {report.blobs_read} blob(s) read, {_size(report.bytes_read)}")
    if report.ok:
        print("roam: no problems found")
        return 0
    print_capped([f"{problem.object}: {problem.message}" for problem in report.problems],
                 indent="  error: ")
    print(f"roam: {len(report.problems)} problem(s) found")
    return 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="verify the store: HEAD, every snapshot, tree and blob reference")
    parser.add_argument("--read-data", action="store_true",
                        help="also read every referenced blob and verify its content")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_check)
