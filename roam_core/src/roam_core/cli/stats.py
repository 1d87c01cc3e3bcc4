"""`roam stats`: what the store holds, read from its indexes and trees (never blob data)."""

from __future__ import annotations

import argparse

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, table
from roam_core.cli.sync import _size


def _count(text: str) -> int:
    """A `--last` value: a whole number, 0 or more (else a usage error, exit 64)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


def _bytes(value: int | None) -> str:
    return "unknown" if value is None else _size(value)


def _stats(args: argparse.Namespace) -> int:
    from roam_core.cli.progress import Progress
    from roam_core.engine.stats import store_stats

    # a reader: no lock taken, nothing created in a home that was never initialised
    with operation(args, "status", lock=False) as session:
        session.require_state()  # "not initialised — run roam init" before any remote call
        progress = Progress("stats", quiet=args.quiet or args.json, unit="trees")
        try:
            stats = store_stats(session, args.last, progress)
        finally:
            progress.close()
    if args.json:
        emit_json(stats.as_json())
        return 0
    print(f"generations: {stats.generations}")
    for label, gen in (("oldest", stats.oldest), ("newest", stats.newest)):
        if gen is not None:
            print(f"  {label}: generation {gen.generation}, {gen.date}, {gen.device}")
    for device, count in sorted(stats.per_device.items()):
        print(f"  {device}: {count}")
    print()
    table(("Objects", "Count", "Bytes"),
          [(kind, item.count, _bytes(item.bytes) + (
              f" (+{item.unknown} of unknown size)" if item.unknown and item.bytes is not None
              else "")) for kind, item in stats.objects.items()])
    print("  (trees, snapshots and indexes are small; their sizes need a read each, not done)")
    print()
    print(f"current generation needs: {_size(stats.current_bytes)}")
    print(f"only older generations:   {_size(stats.older_only_bytes)}")
    print(f"referenced by none:       {_size(stats.unreferenced_bytes)}")
    ratio = "-" if stats.dedup_ratio is None else f"{stats.dedup_ratio:.2f}"
    print(f"dedup ratio:              {ratio} (blob bytes per file per generation ÷ "
          "stored once)")
    if stats.growth:
        print()
        table(("Generation", "Date", "Device", "Files", "File bytes", "Added to store"),
              [(row.generation, row.date, row.device, row.files, _size(row.file_bytes),
                _size(row.added_bytes)) for row in reversed(stats.growth)])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stats", help="what the store holds: generations, objects, bytes, dedup, growth",
        description="What the store holds: generations (per device), objects and bytes by "
        "kind, the bytes the current generation needs and those only older generations "
        "need, the dedup ratio and the growth of the last generations. Read-only: it reads "
        "listings, indexes, snapshots and trees, never file data.")
    parser.add_argument("--last", type=_count, default=10, metavar="N",
                        help="show the growth of the last N generations (default 10)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_stats)
