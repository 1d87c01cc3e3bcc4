"""`roam forget|prune`: managing the store — drop old generations, then free their space."""

from __future__ import annotations

import argparse

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, sanitize


def _whole(text: str) -> int:
    """A count: a whole number, 0 or more, or -1 (every period) — else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < -1:
        raise argparse.ArgumentTypeError(f"must be -1 (unlimited), 0 or more: {text}")
    return value


def _positive(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


def policy_from(args: argparse.Namespace) -> object:
    from roam_core.engine.retention import Duration, Policy

    return Policy(last=args.keep_last, hourly=args.keep_hourly, daily=args.keep_daily,
                  weekly=args.keep_weekly, monthly=args.keep_monthly, yearly=args.keep_yearly,
                  within=None if args.keep_within is None else Duration.parse(args.keep_within),
                  generations=tuple(args.keep_generation or ()))


def _forget(args: argparse.Namespace) -> int:
    from roam_core.cli.progress import Progress
    from roam_core.engine.forget import forget

    policy = policy_from(args)  # a bad duration is a one-line error before the store is read
    with operation(args, "forget", lock=True) as session:
        progress = Progress("forget", quiet=args.quiet or args.json, unit="generations")
        try:
            plan = forget(session, policy, apply=args.apply,  # type: ignore[arg-type]
                          progress=progress)
        finally:
            progress.close()
    if args.json:
        emit_json(plan.as_json())
        return 0
    verb = "forgot" if plan.applied else "would forget"
    if not args.quiet:
        print(f"roam: policy {plan.policy}")
        for row in plan.keep:
            print(f"  keep   {row['generation']:>6}  {row['date']}  {sanitize(row['device'])}"
                  f"  ({', '.join(row['reasons'])})")
        for row in plan.forget:
            print(f"  forget {row['generation']:>6}  {row['date']}  {sanitize(row['device'])}")
    print(f"roam: {verb} {len(plan.forget)} generation(s), keeping {len(plan.keep)}"
          + ("" if plan.applied or not plan.forget else
             "; roam forget --apply records it, then roam prune --apply frees the space"))
    return 0


def _prune(args: argparse.Namespace) -> int:
    import datetime

    from roam_core.cli.progress import Progress
    from roam_core.cli.sync import _size
    from roam_core.engine.prune import prune

    with operation(args, "prune", lock=True) as session:
        progress = Progress("prune", quiet=args.quiet or args.json)
        try:
            result = prune(session, apply=args.apply, grace_minutes=args.grace_minutes,
                           max_repack_bytes=args.max_repack_size, progress=progress)
        finally:
            progress.close()
    if args.json:
        emit_json(result.as_json())
        return 0
    found = ", ".join(f"{count} {kind}" for kind, count in sorted(result.garbage.items()))
    if not args.quiet:
        print(f"roam: {result.kept_generations} generation(s) kept; unreferenced: "
              f"{found or 'nothing'} ({_size(result.garbage_bytes)} of packs)")
        if result.repacked or result.repack_left:
            done = "repacked" if args.apply else "to repack"
            left = f"; {result.repack_left} left for a later run" if result.repack_left else ""
            print(f"roam: {done}: {result.repacked} pack(s) at least "
                  f"{result.repack_threshold:g}% unused ({_size(result.repacked_bytes)}){left}")
    if not args.apply:
        print("roam: nothing deleted; roam prune --apply marks what is unreferenced and "
              f"deletes what was marked at least {result.grace_minutes:g} minute(s) before")
        return 0
    deleted = ", ".join(f"{count} {kind}" for kind, count in sorted(result.deleted.items()))
    print(f"roam: marked {result.marked} object(s); deleted {deleted or 'nothing'} "
          f"({_size(result.deleted_bytes)} of packs)")
    if result.waiting and result.waiting_until is not None:
        when = datetime.datetime.fromtimestamp(result.waiting_until, datetime.UTC)
        print(f"roam: {result.waiting} marked object(s) wait for the grace period; run roam "
              f"prune --apply again after {when.replace(microsecond=0).isoformat()}")
    return 0


#: `--max-repack-size` suffixes, as restic's (powers of 1024).
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(text: str) -> int:
    """A size such as 500M or 2g (k/m/g/t: KiB, MiB, GiB, TiB; none: bytes)."""
    number, unit = text.strip(), ""
    if number[-1:].lower() in _UNITS:
        number, unit = number[:-1], number[-1].lower()
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 500M, 2G)") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a size of 0 or more: {text}")
    return int(value * _UNITS[unit])


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of minutes: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more minutes: {text}")
    return value


def _add_policy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep-last", type=_positive, default=0, metavar="N",
                        help="keep the N newest generations")
    parser.add_argument("--keep-within", metavar="DURATION",
                        help="keep every generation within DURATION of the newest one "
                        "(like 30d, 1y6m, 2d12h: y, m months, d, h)")
    for period, unit in (("hourly", "hours"), ("daily", "days"), ("weekly", "weeks"),
                         ("monthly", "months"), ("yearly", "years")):
        parser.add_argument(f"--keep-{period}", type=_whole, default=0, metavar="N",
                            help=f"keep the newest generation of each of the last N {unit} "
                            "that have one (-1: all)")
    parser.add_argument("--keep-generation", type=_positive, action="append", metavar="N",
                        help="keep generation N (repeatable)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "forget", help="drop old generations by a retention policy (plan; --apply records it)",
        description="Drop the generations a restic-style retention policy does not keep. "
        "Shows the plan; --apply records it (an authenticated forget record: history and "
        "restore then say who forgot a generation, when and under which policy). Never "
        "drops the HEAD generation, nor the generation any device last pushed or pulled, "
        "nor the one this device is on. Nothing is deleted until roam prune --apply.")
    _add_policy(parser)
    parser.add_argument("--apply", action="store_true", help="record the forget")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_forget)

    parser = subparsers.add_parser(
        "prune", help="delete what no kept generation needs (plan; --apply deletes)",
        description="Find what no kept (not forgotten) generation needs: packs none of whose "
        "blobs is referenced, their indexes, and unreachable trees and snapshots; packs mostly "
        "unused (prune_repack_threshold) have their live blobs copied into new packs first. "
        "Shows the "
        "numbers; --apply marks them (pushes from every device then stop relying on them) "
        "and deletes what an earlier run marked at least the grace period before "
        "(prune_grace_minutes, longer than any device's push may run), so a push running "
        "meanwhile never loses a pack it relies on. Run it again after the grace period to "
        "finish. Needs a backend that can delete (local, s3, git).")
    parser.add_argument("--apply", action="store_true", help="mark and delete")
    parser.add_argument("--grace-minutes", type=_minutes, default=None, metavar="M",
                        help="delete what was marked at least M minutes ago (default: the "
                        "prune_grace_minutes setting, 120); 0 only when no other device can "
                        "push meanwhile")
    parser.add_argument("--max-repack-size", type=_bytes, default=None, metavar="SIZE",
                        help="repack at most this many bytes of packs in this run (e.g. "
                        "500M, 2G; 0: none); packs at least prune_repack_threshold percent "
                        "unused are otherwise all repacked")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_prune)
