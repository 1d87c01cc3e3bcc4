"""`roam sessions`: the read-only session archives other devices published.

`roam sessions [list] [--json]` lists what pulls landed under `roam/session-archive/`,
grouped by device then profile (title, date, size). `roam sessions show DEVICE PROFILE
SESSION_ID` prints one transcript on this terminal. The `/roam sessions` slash form only
lists: a transcript is for the person at the terminal, never text handed to the model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roam_core.cli.output import emit_json, sanitize
from roam_core.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sessions", help="the session archives other devices published (read-only)",
        description="List the read-only session archives pulled from your other devices "
        "(they publish them with sync_sessions: true), or print one transcript.")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_list)
    verbs = parser.add_subparsers(dest="verb", metavar="list|show")
    listing = verbs.add_parser("list", help="the archived sessions by device and profile")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)
    show = verbs.add_parser("show", help="print one archived transcript on this terminal")
    show.add_argument("device", help="the device that published it")
    show.add_argument("profile", help="its Hermes profile (default for the root home)")
    show.add_argument("session_id", help="the session id (as roam sessions lists it)")
    show.set_defaults(func=_show)


def _root(args: argparse.Namespace) -> Path:
    from roam_core.home import resolve_home

    return resolve_home(getattr(args, "home", None)).root


def _list(args: argparse.Namespace) -> int:
    from roam_core.cli.sync import _size
    from roam_core.service.views import sessions

    rows = sessions(getattr(args, "home", None)).rows
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        print("No session archives here. A device publishes its finished sessions with "
              "sync_sessions: true; they land with roam pull --apply when it is on here too.")
        return 0
    group = None
    for row in rows:
        if (row["device"], row["profile"]) != group:
            group = (row["device"], row["profile"])
            print(f"{sanitize(row['device'])} / {sanitize(row['profile'])}:")
        print(f"  {sanitize(row['session_id'])}  {sanitize(row['date'] or '-')}  "
              f"{_size(row['size']):>9}  {sanitize(row['title'])}")
    print("Print one with: roam sessions show DEVICE PROFILE SESSION_ID")
    return 0


def _show(args: argparse.Namespace) -> int:
    from roam_core.tiers import archive

    if not (archive.safe_name(args.device) and archive.safe_name(args.profile)
            and archive.safe_session_id(args.session_id)):
        raise UserError("DEVICE, PROFILE and SESSION_ID must be names as roam sessions lists "
                        "them")
    parsed = archive.ArchivePath(args.device, args.profile, args.session_id)
    path = _root(args) / parsed.local_rel
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"no archived session {args.session_id} from "
                        f"{args.device}/{args.profile} here (roam sessions lists them)") from None
    text = data.decode("utf-8", "replace")
    # Another machine wrote this: no terminal escapes reach the screen.
    out = "\n".join(sanitize(line) for line in text.split("\n"))
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0
