"""`roam pull|diff|restore`: review what the store holds, then install it through the journal."""

from __future__ import annotations

import argparse

from roam_core.cli.output import emit_json, note, sanitize
from roam_core.cli.progress import Progress
from roam_core.cli.sync import _size, coverage_line
from roam_core.service.render import CAP, plan_lines


def print_plan(lines: list[str], *, show_all: bool = False, indent: str = "  ") -> None:
    """The plan for people: added/changed lines capped (`service.render.plan_lines`)."""
    for line in plan_lines(lines, show_all=show_all, indent=indent):
        print(line)


def _pull(args: argparse.Namespace) -> int:
    from roam_core.engine.plan import iter_lines
    from roam_core.service.verbs import pull

    only = tuple(args.only or ())
    progress = Progress("pull", quiet=args.quiet or args.json)
    try:
        record = pull(getattr(args, "home", None), note, apply=args.apply,
                      overwrite_conflicts=args.overwrite_conflicts, only=only,
                      keep_seen=args.keep_seen, dry_run=args.dry_run, progress=progress,
                      cron_only=args.cron)
    finally:
        progress.close()
    result, plan, root, cron_off = record.result, record.result.plan, record.root, record.cron_off
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    covered = coverage_line(record.root, record.profiles)
    if not args.quiet:
        print(covered)
    print(f"roam: generation {plan.generation} from {sanitize(plan.device)} ({plan.created}) "
          f"into {sanitize(root)}")
    print_plan(list(iter_lines(plan)), show_all=args.all)
    print(f"  unchanged: {plan.unchanged} file(s)")
    if cron_off:
        print("roam: sync_cron is off on this device, so no cron job definitions travel here "
              "(roam config set sync_cron true)")
    if args.dry_run:
        print(f"roam: downloaded and verified {_size(result.verified_bytes)}; nothing written")
    elif result.applied:
        installed = len(plan.ops)
        if only or args.keep_seen or args.cron:
            stays = "no generation yet" if result.seen is None else f"generation {result.seen}"
            print(f"roam: installed {installed} change(s); this device stays at {stays} "
                  "(a restricted pull does not advance it)")
        else:
            print(f"roam: installed {installed} change(s); now at generation {plan.generation}")
        if result.interrupted_after_commit:
            print("roam: interrupted after the commit point: the install had already "
                  "completed and nothing was rolled back")
        print_resume(plan.cron_paused)
        if plan.kept_conflicts:
            print(f"roam: {plan.kept_conflicts} conflict(s) were kept local — run roam pull "
                  "--apply --overwrite-conflicts to take the remote versions (yours are backed "
                  "up), or roam push to publish yours")
    elif plan.has_changes or plan.kept_conflicts:
        print("roam: run roam pull --apply to install" + (
            " (add --overwrite-conflicts to take the remote versions of conflicts)"
            if plan.kept_conflicts else ""))
    else:
        print("roam: nothing to install")
    return result.exit_code


def print_resume(jobs: list[dict[str, str]]) -> None:
    """Each cron job that landed paused, with the exact command that approves it."""
    if not jobs:
        return
    print(f"roam: {len(jobs)} cron job(s) landed PAUSED; review each, then approve it with:")
    print_plan([f"{job['resume']}    # {job['name']} ({job['change']})" for job in jobs])


def _diff(args: argparse.Namespace) -> int:
    from roam_core.service.views import diff

    record = diff(getattr(args, "home", None), note)
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    for line in record.lines(show_all=args.all):
        print(line)
    return record.exit_code


def _restore(args: argparse.Namespace) -> int:
    from roam_core.service.review import restore

    record = restore(getattr(args, "home", None), note, args.path, args.generation,
                     apply=args.apply)
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    if record.action == "unchanged":
        print(f"roam: {sanitize(args.path)} already matches generation {args.generation}")
    elif record.applied:
        print(f"roam: restored {sanitize(args.path)} from generation {args.generation}; "
              "it is now a local change — roam push publishes it")
        print_resume(record.cron_paused or [])
    else:
        print(f"roam: would {record.action} {sanitize(args.path)} with its version from "
              f"generation {args.generation} ({_size(record.size or 0)}); add --apply to do it")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("pull", help="show what the store would change here; "
                                   "--apply installs it")
    parser.add_argument("--apply", action="store_true", help="install through the journal")
    parser.add_argument("--overwrite-conflicts", action="store_true",
                        help="take the remote version of paths changed on both sides")
    parser.add_argument("--dry-run", action="store_true",
                        help="download and verify, then stop; nothing is written")
    parser.add_argument("--only", action="append", metavar="PREFIX",
                        help="restrict to these paths (repeatable); does not advance the "
                        "generation this device has seen")
    parser.add_argument("--keep-seen", action="store_true",
                        help="do not advance the generation this device has seen")
    parser.add_argument("--cron", action="store_true",
                        help="only the cron job definitions (sync_cron); new or changed jobs "
                        "land paused; does not advance the generation this device has seen")
    parser.add_argument("--all", action="store_true",
                        help=f"list every added and changed path (else the first {CAP})")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_pull)

    parser = subparsers.add_parser("diff", help="the pull preview grouped by scope class")
    parser.add_argument("--all", action="store_true",
                        help=f"list every added and changed path (else the first {CAP})")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_diff)

    parser = subparsers.add_parser("restore", help="bring back a path as it was in a generation")
    parser.add_argument("path", help="a path relative to the home")
    parser.add_argument("--generation", type=int, required=True, metavar="N")
    parser.add_argument("--apply", action="store_true", help="install through the journal")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_restore)
