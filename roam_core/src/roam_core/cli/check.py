"""`roam check [--read-data]`: verify the store; exit 1 when anything in it is wrong."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, note, sanitize
from roam_core.cli.sync import _size, print_capped

if TYPE_CHECKING:
    from roam_core.engine.check import CheckReport


def _check(args: argparse.Namespace) -> int:
    from roam_core.service.review import check

    if args.repair:
        return _repair(args)
    record = check(getattr(args, "home", None), note, read_data=args.read_data)
    report = record.report
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    code = _print_report(report)
    if report.repairable:
        flags = " --read-data" if report.read_data else ""
        print(f"roam: run roam check --repair{flags} to put back what this device still holds "
              "(see docs/troubleshooting.md)")
    return code


def _repair(args: argparse.Namespace) -> int:
    from roam_core.engine.repair import repair

    # a repair writes to the store: one writer per home, as a push
    with operation(args, "check", lock=True) as session:
        result = repair(session, read_data=args.read_data)
    remaining = result.remaining
    if args.json:
        emit_json(result.as_json())
        return 0 if remaining.ok else 1
    if result.head is not None:
        print(f"roam: HEAD re-published at generation {result.head}")
    if result.objects:
        print(f"roam: repaired: {result.blobs} blob(s) ({_size(result.bytes)}) sealed again "
              f"from this device's files, {result.trees} tree(s) and {result.snapshots} "
              f"snapshot(s) put back, {result.indexes} index(es) rewritten, "
              f"{result.voided_packs} lost or damaged pack(s) recorded as void")
    if result.republished is not None:
        print(f"roam: published generation {result.republished - 1} again as generation "
              f"{result.republished}, with fresh trees (what it used was damaged; trees and "
              "snapshots are never replaced in place)")
    elif not result.objects and result.head is None:
        print("roam: nothing this device could repair")
    if remaining.ok:
        print("roam: no problems found")
        return 0
    print(f"roam: cannot repair {len(remaining.problems)} problem(s) (no copy on this device; "
          "a device that still holds these files can run roam check --repair):")
    print_capped([f"{problem.object}: {problem.message}" for problem in remaining.problems],
                 indent="  error: ")
    return 1


def _print_report(report: CheckReport) -> int:
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
    parser.add_argument("--repair", action="store_true",
                        help="put back lost objects from this device's files, then check again")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_check)
