"""`roam config get|set|unset|list`: roam's settings in the root home's config.yaml.

Every key is checked against the registry of core's and the installed plugins' settings
(`roam_core.settings.registry`) before anything is written; comments in the file are kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from roam_core.cli.output import emit_json, note, table
from roam_core.errors import UserError
from roam_core.home import resolve_home
from roam_core.settings import (
    SETTINGS_PATH,
    Registry,
    load_settings,
    registry,
    remove_setting,
    write_settings,
)


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


def _registry() -> Registry:
    from roam_core.manager import get_manager

    return registry(get_manager())


def _set(args: argparse.Namespace) -> int:
    _refuse_secret(args.key)
    value = _parse_value(args.value)
    _registry().check(args.key, value)
    if args.key == "retention":
        from roam_core.engine.retention import Policy

        Policy.from_setting(value)  # an unknown rule or a bad count: a one-line UserError
    write_settings(resolve_home(args.home).root, {args.key: value})
    return 0


def _unset(args: argparse.Namespace) -> int:
    # Unknown keys may be unset too: that is how a typo written by hand is cleaned up.
    if not remove_setting(resolve_home(args.home).root, args.key):
        raise UserError(f"setting {args.key} is not set in config.yaml")
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


def _list(args: argparse.Namespace) -> int:
    root = resolve_home(args.home).root
    known = _registry()
    explicit = _explicit(root)
    rows = []
    for name, declared in sorted(known.settings.items()):
        present = name in explicit
        rows.append({"name": name, "value": explicit[name] if present else declared.default,
                     "default": declared.default, "plugin": declared.plugin,
                     "source": "config.yaml" if present else "default", "help": declared.help})
    for name in sorted(set(explicit) - set(known.settings)):
        rows.append({"name": name, "value": explicit[name], "default": None, "plugin": None,
                     "source": "config.yaml (unknown: roam config unset to remove)",
                     "help": ""})
    for problem in known.problems:
        note(problem)
    if args.json:
        emit_json(rows)
        return 0
    table(("Setting", "Value", "Default", "Source", "Declared by"),
          [(r["name"], _show(r["value"]), _show(r["default"]), r["source"], r["plugin"] or "-")
           for r in rows])
    return 0


def _explicit(root: Path) -> dict[str, object]:
    """The keys config.yaml itself sets in roam's block (not the defaults)."""
    from roam_core.settings import load_yaml_mapping

    data: object = load_yaml_mapping(root / "config.yaml")
    for part in SETTINGS_PATH:
        data = data.get(part) if isinstance(data, dict) else None
    return dict(data) if isinstance(data, dict) else {}


def _show(value: object) -> str:
    return "-" if value is None else value if isinstance(value, str) else json.dumps(value)


def _settings_help(parser: argparse.ArgumentParser) -> None:
    """Append every known setting to `parser`'s --help, computed only when help is asked for.

    Plugins are loaded then and only then, so building the parser for every other command
    stays as cheap as before.
    """
    plain = parser.format_help

    def format_help() -> str:
        known = _registry()
        width = max(map(len, known.settings), default=0) + 2
        lines = [f"  {name.ljust(width)}{declared.plugin:<8} {declared.help}".rstrip()
                 for name, declared in sorted(known.settings.items())]
        return plain() + "\nsettings (name, declared by, meaning):\n" + "\n".join(lines) + "\n"

    parser.format_help = format_help  # type: ignore[method-assign]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="get, set, unset or list roam's settings",
        description="Settings live in the root home's config.yaml under "
        "plugins.entries.roam.settings. `roam config list` shows every setting core and the "
        "installed plugins declare, with its value, default and source.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="get|set|unset|list")
    setter = verbs.add_parser("set", help="set one setting (the value is parsed as YAML)",
                              description="Set one setting after checking its name and value.")
    setter.add_argument("key")
    setter.add_argument("value")
    setter.set_defaults(func=_set)
    _settings_help(parser)
    _settings_help(setter)
    unsetter = verbs.add_parser("unset", help="remove one setting (back to its default)")
    unsetter.add_argument("key")
    unsetter.set_defaults(func=_unset)
    getter = verbs.add_parser("get", help="print one setting, or all as JSON")
    getter.add_argument("key", nargs="?")
    getter.set_defaults(func=_get)
    lister = verbs.add_parser("list", help="every setting: value, default, source, plugin")
    lister.add_argument("--json", action="store_true", help="print JSON")
    lister.set_defaults(func=_list)
