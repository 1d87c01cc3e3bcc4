"""`roam mirror status|flush|retry|backfill`: the session mirror from the command line."""

from __future__ import annotations

import argparse
import time
from typing import Any

from roam_core.cli.output import emit_json, table
from roam_core.errors import UserError
from roam_core.home import resolve_home


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("mirror", help="the session mirror (turns posted to Discord)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    status = verbs.add_parser("status", help="enabled sinks, spool depth, last errors")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(func=run_status)

    flush = verbs.add_parser("flush", help="deliver every spooled turn now")
    flush.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="wait at most S seconds for another sender (default 60)")
    flush.set_defaults(func=run_flush)

    retry = verbs.add_parser("retry", help="send turns a sink gave up on again")
    retry.add_argument("event_ids", nargs="*", metavar="EVENT",
                       help="only these turns (ids from `mirror status`); default all")
    retry.add_argument("--sink", default="", metavar="NAME",
                       help="only this sink (default: every sink)")
    retry.add_argument("--no-flush", action="store_true",
                       help="only put them back in line; deliver later")
    retry.set_defaults(func=run_retry)

    backfill = verbs.add_parser("backfill", help="mirror past sessions from state.db")
    backfill.add_argument("--session", metavar="ID", help="only this session")
    backfill.add_argument("--since", metavar="DATE",
                          help="only sessions started on or after DATE (2026-01-31[T12:00])")
    backfill.add_argument("--no-flush", action="store_true",
                          help="only spool; deliver later (next Hermes session or flush)")
    backfill.set_defaults(func=run_backfill)


def _ago(when: Any) -> str:
    if not when:
        return "never"
    seconds = max(0, int(time.time() - float(when)))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def run_status(args: argparse.Namespace) -> int:
    from roam_core.mirror.status import mirror_status

    home = resolve_home(args.home)
    report = mirror_status(home.root)
    if args.json:
        emit_json(report)
        return 0
    if report["error"]:
        print(f"settings error: {report['error']}")
    if not report["enabled"]:
        print("Mirror is off (enable it with mirror_sinks: [discord] in roam's settings).")
    print(f"Spool: {report['spooled']} turn(s) in {report['spool']}")
    if report["held"]:
        print(f"Held unsent: {report['held']} turn(s): {report['held_reason']}")
    if report["sinks"]:
        rows = [[s["name"], s["status"], s["pending"], _ago(s["last_delivery_at"]),
                 f"{s['last_error']} ({_ago(s['last_error_at'])})" if s["last_error"] else "-"]
                for s in report["sinks"]]
        table(["Sink", "Status", "Pending", "Last delivery", "Last error"], rows)
    for sink in report["sinks"]:
        if sink["retry_in"]:
            print(f"{sink['name']}: next try in {sink['retry_in']:.0f}s")
        for turn in sink["given_up"]:
            print(f"{sink['name']} gave up on {turn['event_id']} ({turn['session']}, "
                  f"{_ago(turn['at'])}): {turn['reason']}")
        if sink["given_up"]:
            print(f"Send them again with: roam mirror retry (or name the turns: "
                  f"roam mirror retry {sink['given_up'][0]['event_id']})")
    return 0


def run_flush(args: argparse.Namespace) -> int:
    from roam_core.mirror.sender import flush
    from roam_core.mirror.status import mirror_status

    home = resolve_home(args.home)
    result = flush(home.root, timeout=args.timeout)
    if result.busy:
        raise UserError("another process is sending the mirror's turns; try again later")
    report = mirror_status(home.root)
    if not report["enabled"]:
        raise UserError("the mirror is off; enable it with mirror_sinks: [discord]")
    pending = sum(s["pending"] for s in report["sinks"])
    print(f"Delivered {result.delivered} turn(s); {pending} still pending.")
    for name, message in result.errors.items():
        print(f"{name}: {message}")
    if report["held"]:
        print(f"Held unsent: {report['held']} turn(s): {report['held_reason']}")
    return 1 if result.errors or report["held"] else 0


def run_retry(args: argparse.Namespace) -> int:
    from roam_core.mirror.sender import retry_given_up

    home = resolve_home(args.home)
    count = retry_given_up(home.root, args.event_ids, sink=args.sink)
    if args.event_ids and count < len(set(args.event_ids)):
        raise UserError(f"{len(set(args.event_ids)) - count} of the named turn(s) are not "
                        "given up (see roam mirror status)")
    print(f"{count} given-up turn(s) back in line.")
    if args.no_flush or not count:
        return 0
    return run_flush(argparse.Namespace(home=args.home, timeout=60.0))


def run_backfill(args: argparse.Namespace) -> int:
    from roam_core.mirror.backfill import backfill, parse_since

    home = resolve_home(args.home)
    since = parse_since(args.since) if args.since else None
    result = backfill(home, session=args.session, since=since)
    print(f"Backfill: {result.sessions} session(s), {result.turns} turn(s); "
          f"{result.spooled} spooled, {result.skipped} already mirrored.")
    if args.no_flush or not result.spooled:
        return 0
    return run_flush(argparse.Namespace(home=args.home, timeout=60.0))
