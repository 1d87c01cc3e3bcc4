"""`roam plugins|backends|sinks|rules list`: what is installed, as a table or JSON."""

from __future__ import annotations

import argparse

from roam_core.cli.output import emit_json, table
from roam_core.home import resolve_home
from roam_core.manager import get_manager

HEADERS = ("Name", "Distribution", "Version", "Status", "Summary")
EMPTY = {"plugin": "No plugins installed.", "backend": "No backends installed.",
         "sink": "No sinks installed.", "rules": "No rule providers installed."}


def _run(args: argparse.Namespace) -> int:
    manager = get_manager()
    kind = args.listing_kind
    if kind == "plugin":
        rows = manager.plugins()
    else:
        home = resolve_home(getattr(args, "home", None)).root if kind == "rules" else None
        rows = manager.listing(kind, home=home)
    if args.json:
        emit_json([row.as_json() for row in rows])
        return 0
    if not rows:
        print(EMPTY[kind])
        return 0
    table(HEADERS, [(r.name, r.distribution, r.version, r.status, r.summary) for r in rows])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    for noun, kind, help_text in (
        ("plugins", "plugin", "list every installed roam plugin"),
        ("backends", "backend", "list the storage backends"),
        ("sinks", "sink", "list the session-event sinks"),
    ):
        parser = subparsers.add_parser(noun, help=help_text, description=help_text)
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="list")
        lister = verbs.add_parser("list", help=help_text, description=help_text)
        lister.add_argument("--json", action="store_true", help="print JSON")
        lister.set_defaults(func=_run, listing_kind=kind)


def register_rules_listing(verbs: argparse._SubParsersAction) -> None:
    """`roam rules list`: the rule providers (the `rules` verb itself lives in scope)."""
    lister = verbs.add_parser("list", help="list the scope-rule providers")
    lister.add_argument("--json", action="store_true", help="print JSON")
    lister.set_defaults(func=_run, listing_kind="rules")
