"""`roam config get|set`: roam's settings in the root home's config.yaml, comments kept."""

from __future__ import annotations

import argparse
import json

from roam_core.cli.output import emit_json
from roam_core.errors import UserError
from roam_core.home import resolve_home
from roam_core.settings import DEFAULTS, check_core_setting, load_settings, write_settings


def _parse_value(raw: str) -> object:
    import yaml

    try:
        return yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        return raw


def _refuse_secret(key: str) -> None:
    from roam_core.config.sensitive import is_secret_key
    from roam_core.crypto import KEY_ENV

    if key == KEY_ENV or is_secret_key(key):
        # config.yaml is a plain file Hermes and roam read; the value is never echoed back
        raise UserError(f"{key} looks like a secret, and roam never writes secrets: set it "
                        "in the environment or as a line of the root home's .env instead")


def _set(args: argparse.Namespace) -> int:
    _refuse_secret(args.key)
    value = _parse_value(args.value)
    check_core_setting(args.key, value)
    write_settings(resolve_home(args.home).root, {args.key: value})
    return 0


def _get(args: argparse.Namespace) -> int:
    settings = load_settings(resolve_home(args.home).root)
    if args.key is None:
        emit_json(settings)
        return 0
    if args.key not in settings:
        raise UserError(f"setting {args.key} is not set")
    value = settings[args.key]
    print(json.dumps(value) if not isinstance(value, str) else value)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="get or set roam's settings (plugins.entries.roam.settings)",
        description="Settings live in the root home's config.yaml under "
        "plugins.entries.roam.settings. Known: " + ", ".join(sorted(DEFAULTS)) + ".")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="get|set")
    setter = verbs.add_parser("set", help="set one setting (the value is parsed as YAML)")
    setter.add_argument("key")
    setter.add_argument("value")
    setter.set_defaults(func=_set)
    getter = verbs.add_parser("get", help="print one setting, or all as JSON")
    getter.add_argument("key", nargs="?")
    getter.set_defaults(func=_get)
