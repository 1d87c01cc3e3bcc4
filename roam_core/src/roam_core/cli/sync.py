"""`roam init|status|push|devices|history`: founding a fleet and publishing generations."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, note, sanitize, table
from roam_core.cli.progress import Progress
from roam_core.errors import RoamError
from roam_core.service.render import CAP


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


def print_capped(lines: list[str], indent: str = "  ") -> None:
    for line in lines[:CAP]:
        print(f"{indent}{sanitize(line)}")
    if len(lines) > CAP:
        print(f"{indent}… {len(lines) - CAP} more")


def skipped_lines(skipped: list[dict[str, str]]) -> list[str]:
    return [f"skipped: {item['path']} ({item['reason']})" for item in skipped]


def print_skipped(skipped: list[dict[str, str]]) -> None:
    """What the walk left out, with reasons (capped; --json lists every one)."""
    if skipped:
        print(f"roam: {len(skipped)} path(s) not synced from here (what the last generation "
              "held there is kept):")
        print_capped(skipped_lines(skipped))


def print_secret_findings(report: dict[str, Any]) -> None:
    """The secret-looking values `status` and `rules` found, as push would list them."""
    from roam_core.engine.secretwarn import finding_lines

    findings = report.get("secret_findings") or []
    if findings:
        print(f"warning: a push would stop: {len(findings)} secret-looking value(s) in shared "
              "files (fix them, keep them local, or allow them in roam/secrets-allow.yaml):")
        print_capped(finding_lines(findings))
    if report.get("secret_scan_error"):
        print(f"warning: the secret scan could not run: {sanitize(report['secret_scan_error'])}")


def coverage_line(root: object, profiles: list[tuple[str, bool]]) -> str:
    """The covered root and each profile's state, in one line (push and pull print it first)."""
    states = ", ".join(f"{sanitize(name)} ({'excluded' if excluded else 'synced'})"
                       for name, excluded in profiles) or "none"
    return f"roam: home {sanitize(root)}; profiles: {states}"


def _init(args: argparse.Namespace) -> int:
    from roam_core.engine.init import init

    with operation(args, "init") as session:
        result = init(session, create_remote=args.create_remote, name=args.name,
                      store_format=args.store_format)
    if result.founded:
        print(f"roam: founded a new fleet on {sanitize(result.identity)} as device "
              f"{sanitize(result.device)} (id {result.device_id}, generation 0)")
    elif result.rejoined:
        print(f"roam: already set up on {sanitize(result.identity)} as {sanitize(result.device)}")
    else:
        print(f"roam: joined the fleet on {sanitize(result.identity)} at generation "
              f"{result.generation} as device {sanitize(result.device)} (id "
              f"{result.device_id}); run roam pull next")
    return 0


def _status(args: argparse.Namespace) -> int:
    from roam_core.service.verbs import status

    record = status(getattr(args, "home", None), note)
    report = record.as_json()
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    for rel in report.get("links_at_top", []):
        print(f"warning: {sanitize(rel)} is a symbolic link: roam never follows links, so it "
              "does not sync from this device (docs/decisions.md, symlinks)")
    print(f"home:    {sanitize(report['root'])} (device {sanitize(report['device'])})")
    for profile in report.get("profiles", []):
        marker = "(excluded)" if profile["excluded"] else "(synced)"
        print(f"profile: {sanitize(profile['name'])}{marker}")
    local = report["local_generation"]
    where = "not pulled yet" if local is None else f"generation {local}"
    print(f"local:   {where}, {report['dirty']} local change(s)")
    for key, value in sorted((report.get("optional") or {}).items()):
        print(f"option:  {key}: {'on' if value else 'off'}")
    if (report.get("optional") or {}).get("hooks"):
        print("         hooks is on: this device runs hook code written on your other machines")
    print_skipped(report.get("skipped", []))
    print_secret_findings(report)
    open_conflicts = [*report["conflicts"], *(
        f"{rel}: {key}" for rel, keys in report.get("entry_conflicts", {}).items()
        for key in keys)]
    if open_conflicts:  # every one: a conflict is a decision waiting, never cut
        print(f"conflicts kept local: {len(open_conflicts)}")
        for line in open_conflicts:
            print(f"  {sanitize(line)}")
        print("         resolve: roam pull --apply --overwrite-conflicts takes the remote "
              "versions (yours are backed up); roam push publishes yours")
    if report.get("kept_in_backups"):
        print(f"backups: {report['kept_in_backups']} local version(s) kept only in backups — "
              "roam backups list")
    if not report["reachable"]:
        raise RoamError(report["error"])  # already says what kind of failure it is
    print(f"remote:  generation {report['remote_generation']} on {sanitize(report['identity'])},"
          f" fleet of {report['fleet_size']}")
    if report["behind"] and not report["generations_ahead"]:
        print("state:   not pulled yet — run roam pull")
    elif report["behind"]:
        then = ", then roam push" if report["dirty"] else ""
        print(f"state:   remote is {report['generations_ahead']} generation(s) ahead (from "
              f"{sanitize(report['last_push_device'])}, {sanitize(report['remote_time'])}) — "
              f"run roam pull{then}")
    elif report["dirty"]:
        print("state:   ahead — run roam push")
    else:
        print("state:   in sync")
    return 0


def _push(args: argparse.Namespace) -> int:
    from roam_core.service.verbs import push

    progress = Progress("push", quiet=args.quiet or args.json)
    try:
        record = push(getattr(args, "home", None), note, force=args.force,
                      dry_run=args.dry_run, progress=progress,
                      confirm=_confirmer(args, progress))
    finally:
        progress.close()
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    if record.stopped is not None:
        return _secrets_found(record.stopped)
    result = record.result
    assert result is not None
    covered = coverage_line(record.root, record.profiles)
    if not args.quiet:
        print(covered)
    for line in result.notes:
        print(f"roam: {sanitize(line)}")
    print_skipped(result.skipped)
    archive = result.archive or {}
    if archive.get("active"):
        print(f"roam: session archive: {archive['sessions']} finished session(s), "
              f"{_size(int(str(archive['bytes'])))}")
    if result.nothing:
        print("roam: nothing to push — the home matches the last synced generation")
        return 0
    if result.dry_run:
        lines = ([f"added: {p}" for p in result.added] + [f"changed: {p}" for p in result.changed]
                 + [f"removed: {p}" for p in result.removed])
        print(f"roam: would push {len(lines)} change(s), {_size(result.bytes_changed)}:")
        print_capped(lines)
        if result.findings:
            print(f"roam: the push would stop: {len(result.findings)} secret-looking value(s):")
            print_capped([str(finding) for finding in result.findings])
            return 1
        return 0
    print(f"roam: pushed generation {result.generation} ({len(result.added)} added, "
          f"{len(result.changed)} changed, {len(result.removed)} removed; "
          f"{_size(result.uploaded_bytes)} uploaded)")
    return 0


def _secrets_found(found: Exception) -> int:
    """The stopped push's findings, one `path:line rule (masked excerpt)` per line."""
    for line in str(found).splitlines():
        print(f"roam: {sanitize(line)}" if not line.startswith(" ") else sanitize(line),
              file=sys.stderr)
    return 1


def _confirmer(args: argparse.Namespace, progress: Progress) -> Callable[[list[str], str], bool]:
    """How `push --force` confirms removals: --yes, else a question on a terminal."""

    def confirm(removed: list[str], why: str) -> bool:
        if args.json:
            return bool(args.yes)
        progress.close()
        print(f"roam: push --force {sanitize(why)}:")
        print_capped([f"would remove: {path}" for path in removed])
        if args.yes:
            return True
        if not sys.stdin.isatty():
            return False
        try:
            answer = input("roam: publish these removals? [y/N] ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return confirm


def _devices(args: argparse.Namespace) -> int:
    from roam_core.service.views import devices

    record = devices(getattr(args, "home", None), note)
    rows = record.rows
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    table(("Device", "Id", "Last push", "Last pull", "roam", "Hermes", "Seen"),
          [(r["device"] + (" (this device)" if r["this"] else ""), r["id"],
            _dash(r.get("last_push")), _dash(r.get("last_pull")), _dash(r.get("roam_version")),
            _dash(r.get("hermes_version")), _dash(r.get("time"))) for r in rows])
    return record.exit_code


def _rename(args: argparse.Namespace) -> int:
    from roam_core.engine.devices import rename

    with operation(args, "push") as session:
        old, new = rename(session, args.new_name)
    print(f"roam: this device is now named {sanitize(new)} (was {sanitize(old)})")
    return 0


def _forget(args: argparse.Namespace) -> int:
    from roam_core.engine.devices import forget

    with operation(args, "push") as session:
        name = forget(session, args.device)
    print(f"roam: forgot device {sanitize(name)}; what it published stays in the store")
    return 0


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def _history(args: argparse.Namespace) -> int:
    from roam_core.service.review import history

    record = history(getattr(args, "home", None), note, args.path)
    rows = record.rows
    if args.json:
        emit_json(record.as_json())
        return record.exit_code
    if args.path:
        lines = [f"{r['generation']:>5}  {r['date']}  {r['device']}  " + (
            "deleted" if r["deleted"] else f"{r['sha256'][:12]}  {_size(r['size'])}")
            for r in rows]
    else:
        lines = [f"{r['generation']:>5}  {r['date']}  {r['device']}  {r['files']} files, "
                 f"{_size(r['bytes'])}" for r in rows]
    if not lines:
        print("roam: no history" + (f" for {args.path}" if args.path else ""))
    print_capped(lines, indent="")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("init", help="found a fleet or join one on this device")
    parser.add_argument("--create-remote", action="store_true",
                        help="create the bucket, branch or folder if it does not exist")
    parser.add_argument("--name", metavar="NAME",
                        help="this device's name in the fleet (default: the device_name "
                        "setting, else the host name)")
    parser.add_argument("--format", dest="store_format", type=int, choices=(1, 2),
                        default=None, metavar="{1,2}",
                        help="the format of a store founded here (default 2; 1 while a "
                        "device still runs a roam without format 2; see roam upgrade)")
    parser.set_defaults(func=_init)

    parser = subparsers.add_parser("status", help="local and remote generation, changes")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_status)

    parser = subparsers.add_parser("push", help="publish this home's shared files")
    parser.add_argument("--force", action="store_true",
                        help="publish even though the remote moved ahead")
    parser.add_argument("--dry-run", action="store_true", help="list what would be pushed")
    parser.add_argument("--yes", action="store_true",
                        help="with --force: publish large removals without asking (scripts)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_push)

    parser = subparsers.add_parser("devices", help="the fleet's devices; rename or forget one")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_devices)
    verbs = parser.add_subparsers(dest="verb", metavar="list|rename|forget")
    listing = verbs.add_parser("list", help="the fleet's devices (name, id, versions)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_devices)
    renaming = verbs.add_parser("rename", help="give this device a new name (unique in the "
                                "fleet)")
    renaming.add_argument("new_name", metavar="NEW_NAME")
    renaming.set_defaults(func=_rename)
    forgetting = verbs.add_parser("forget", help="drop another device from the roster (by "
                                  "name or id); what it published stays")
    forgetting.add_argument("device", metavar="DEVICE")
    forgetting.set_defaults(func=_forget)

    parser = subparsers.add_parser("history", help="every generation, or one path's versions")
    parser.add_argument("path", nargs="?", help="a path relative to the home")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_history)

