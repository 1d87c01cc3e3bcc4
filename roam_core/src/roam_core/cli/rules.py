"""`roam rules`: the scope rules in force on this device."""

from __future__ import annotations

import argparse

from roam_core.cli.listing import register_rules_listing


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rules", help="show the scope rules and list providers")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="list")
    register_rules_listing(verbs)
