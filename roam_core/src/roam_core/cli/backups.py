"""`roam backups list|show|restore|drop`: the versions installs replaced, kept in roam/backups/."""

from __future__ import annotations

import argparse

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, sanitize, table
from roam_core.cli.sync import _size


def _list(args: argparse.Namespace) -> int:
    from roam_core.engine.backups import kept

    with operation(args, "status", lock=False) as session:
        found = kept(session.state_dir)
    if args.json:
        emit_json(found)
        return 0
    if not found:
        print("No local versions are kept only in backups.")
        return 0
    table(["Backup", "Files only kept here"],
          [[item["stamp"], ", ".join(sanitize(rel) for rel in item["files"])] for item in found])
    print("roam backups show BACKUP lists a backup; roam backups restore BACKUP PATH puts a "
          "version back; roam backups drop BACKUP deletes it")
    return 0


def _show(args: argparse.Namespace) -> int:
    from roam_core.engine.backups import show

    with operation(args, "status", lock=False) as session:
        found = show(session.state_dir, args.backup)
    if args.json:
        emit_json(found)
        return 0
    for item in found["files"]:
        marker = "  (only kept here)" if item["only_in_backups"] else ""
        print(f"{sanitize(item['path'])}  {_size(item['size'])}{marker}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from roam_core.engine.backups import restore

    with operation(args, "restore", lock=True) as session:
        restored = restore(session, args.backup, args.paths)
    for rel in restored:
        print(f"roam: restored {sanitize(rel)} from backup {args.backup}; it is now a local "
              "change — roam push publishes it")
    return 0


def _drop(args: argparse.Namespace) -> int:
    from roam_core.engine.backups import drop

    with operation(args, "restore", lock=True) as session:
        drop(session.state_dir, args.backup)
    print(f"roam: deleted backup {args.backup}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "backups", help="versions installs replaced; those never pushed are kept until dropped")
    verbs = parser.add_subparsers(dest="backups_command", metavar="VERB", required=True)
    sub = verbs.add_parser("list", help="backups holding versions the store never received")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.set_defaults(func=_list)
    sub = verbs.add_parser("show", help="every file of one backup")
    sub.add_argument("backup", help="a backup's stamp (from roam backups list)")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.set_defaults(func=_show)
    sub = verbs.add_parser("restore", help="put backed-up versions back through the journal")
    sub.add_argument("backup", help="a backup's stamp")
    sub.add_argument("paths", nargs="+", metavar="PATH", help="paths relative to the home")
    sub.set_defaults(func=_restore)
    sub = verbs.add_parser("drop", help="delete one backup for good")
    sub.add_argument("backup", help="a backup's stamp")
    sub.set_defaults(func=_drop)
