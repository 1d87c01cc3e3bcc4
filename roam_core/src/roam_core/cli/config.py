"""`roam config get|set`: roam's settings in the root home's config.yaml, comments kept."""

from __future__ import annotations

import argparse
import io
import json

from roam_core.cli.output import emit_json
from roam_core.engine.fs import write_atomic
from roam_core.errors import ConfigError, UserError
from roam_core.home import resolve_home
from roam_core.settings import DEFAULTS, SETTINGS_PATH, load_settings


def _parse_value(raw: str) -> object:
    import yaml

    try:
        return yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        return raw


def _set(args: argparse.Namespace) -> int:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    home = resolve_home(args.home)
    path = home.config_path
    yaml = YAML()
    yaml.preserve_quotes = True
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = yaml.load(text) if text.strip() else None
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: {getattr(error, 'problem', None) or 'invalid YAML'}") from None
    if document is None:
        document = {}
    if not hasattr(document, "get"):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    node = document
    for part in SETTINGS_PATH:
        child = node.get(part)
        if child is None:
            node[part] = {}
            child = node[part]
        if not hasattr(child, "get"):
            raise ConfigError(f"{path}: {part} is not a mapping")
        node = child
    node[args.key] = _parse_value(args.value)
    out = io.StringIO()
    yaml.dump(document, out)
    home.root.mkdir(parents=True, exist_ok=True)
    write_atomic(path, out.getvalue().encode("utf-8"), mode=0o600 if not path.exists()
                 else path.stat().st_mode & 0o777)
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
