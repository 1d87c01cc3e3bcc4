"""The generated parts of docs/ match the code: CLI reference, settings, what syncs."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("roam_docs_generate", REPO / "docs" /
                                                  "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _load()


def test_generated_docs_are_current() -> None:
    stale = [str(path.relative_to(REPO)) for path in generate.stale()]
    assert not stale, f"stale generated docs {stale}: run python docs/generate.py"


def test_a_stale_copy_is_detected(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    assert generate.stale(docs) == []
    cli = docs / "cli.md"
    cli.write_text(cli.read_text().replace("## roam push", "## roam shove"))
    syncs = docs / "what-syncs.md"
    syncs.write_text(syncs.read_text().replace("| `SOUL.md` |", "| `SOUL.txt` |"))
    assert set(generate.stale(docs)) == {cli, syncs}


def test_every_verb_is_in_the_cli_reference() -> None:
    from roam_core.cli.main import build_parser

    text = (REPO / "docs" / "cli.md").read_text()
    verbs = [" ".join(path) for path, _parser, _help in generate.walk(build_parser())]
    assert {"init", "push", "pull", "restore", "mirror backfill", "auto on"} <= set(verbs)
    for verb in verbs:
        assert f"## roam {verb}\n" in text, verb


def test_the_walk_picks_up_a_verb_added_later() -> None:
    from roam_core.cli.main import build_parser

    parser = build_parser()
    sub = generate._subparsers(parser)
    newer = sub.add_parser("zz-future", help="a verb another engineer adds")
    newer.add_subparsers(dest="verb").add_parser("export", help="nested")
    newer.add_argument("--since", metavar="DATE", help="from DATE")
    found = {" ".join(path): child for path, child, _help in generate.walk(parser)}
    assert {"zz-future", "zz-future export"} <= set(found)
    assert generate.usage(("zz-future",), found["zz-future"]) == \
        "roam zz-future [{export}] [--since DATE]"


def test_usage_lines_parse_back() -> None:
    """Every generated usage line, with placeholders filled, is accepted by the parser."""
    from roam_core.cli.main import build_parser

    parser = build_parser()
    for path, child, _help in generate.walk(parser):
        if generate._subparsers(child) is not None and generate._subparsers(child).required:
            continue
        argv = list(path)
        for action in child._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.required and action.option_strings:
                argv += [action.option_strings[-1], "1"]
            elif not action.option_strings and action.nargs != "?":
                argv.append(next(iter(action.choices)) if action.choices else "x")
        parser.parse_args(argv)


def test_every_core_setting_is_described() -> None:
    from roam_core.settings import DEFAULTS

    missing = set(DEFAULTS) - set(generate.CORE_SETTINGS)
    assert not missing, f"describe these settings in docs/generate.py CORE_SETTINGS: {missing}"
    assert not set(generate.CORE_SETTINGS) - set(DEFAULTS), "CORE_SETTINGS names a dead setting"


def test_settings_table_lists_every_plugin_setting() -> None:
    from roam_core.manager import get_manager

    text = (REPO / "docs" / "settings.md").read_text()
    manager = get_manager()
    for record in [*manager.storage_backends().values(), *manager.session_sinks().values()]:
        for setting in record.settings:
            assert f"| `{setting.name}` |" in text, setting.name


def test_every_environment_name_in_the_code_is_documented() -> None:
    source = "\n".join(p.read_text() for p in REPO.glob("roam_*/src/**/*.py"))
    names = set(re.findall(r"[\"']((?:ROAM|HERMES)_[A-Z0-9_]+)[\"']", source))
    documented = set(generate.SECRETS) | set(generate.ENVIRONMENT)
    assert names <= documented, f"document in docs/generate.py: {names - documented}"
    for name in documented:
        assert name in source, f"{name} is documented but no longer in the code"


@pytest.mark.parametrize("page", ["settings.md", "what-syncs.md", "cli.md"])
def test_generated_pages_are_linked_from_the_readme(page: str) -> None:
    assert f"docs/{page}" in (REPO / "README.md").read_text()
