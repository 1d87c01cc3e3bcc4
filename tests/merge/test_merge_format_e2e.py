"""A third-party merge format, installed as a distribution, merges a file both devices changed."""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

from support.cli import roam_env
from support.flow import Roam, configured_device, ok

FORMAT_PLUGIN = '''
"""A JSON-lines journal format, as a third party would ship it."""
from roam_core.hookspecs import hookimpl
from roam_core.merge import merge_json_lines
from roam_core.types import MergeFormat

@hookimpl
def roam_merge_formats():
    yield MergeFormat("journal-lines", ("memories/*.jsonl",), merge_json_lines,
                      "JSON-lines journals, entry by entry")
'''


def _install_format(site: Path) -> None:
    site.mkdir()
    (site / "journal_roam.py").write_text(textwrap.dedent(FORMAT_PLUGIN))
    info = site / "journal_roam-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: journal-roam\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[roam.plugins]\njournal = journal_roam\n")


def _devices(tmp_path: Path, env: dict[str, str]) -> tuple[Roam, Roam]:
    store = tmp_path / "store"
    return tuple(  # type: ignore[return-value]
        configured_device(tmp_path / name, {"device_name": name, "local_dir": str(store)}, env)
        for name in ("laptop", "desktop"))


def _both_change_the_journal(tmp_path: Path, env: dict[str, str]) -> tuple[Roam, Path]:
    a, b = _devices(tmp_path, env)
    journal_a = tmp_path / "laptop" / "memories" / "log.jsonl"
    journal_b = tmp_path / "desktop" / "memories" / "log.jsonl"
    journal_a.parent.mkdir()
    journal_a.write_text('{"n": 1}\n')
    ok(a("init", "--create-remote"))
    ok(a("push"))
    ok(b("init"))
    ok(b("pull", "--apply"))
    journal_b.write_text('{"n": 1}\n{"n": "desktop"}\n')
    ok(b("push"))
    journal_a.write_text('{"n": 1}\n{"n": "laptop"}\n')
    return a, journal_a


def test_a_plugin_format_merges_a_file_both_devices_changed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_format(site)
    env = roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(32), PYTHONPATH=str(site))
    a, journal_a = _both_change_the_journal(tmp_path, env)
    result = a("pull", "--apply")
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert journal_a.read_text() == '{"n": 1}\n{"n": "laptop"}\n{"n": "desktop"}\n'


def test_without_the_plugin_the_same_pull_keeps_a_conflict(tmp_path: Path) -> None:
    env = roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(32))
    a, journal_a = _both_change_the_journal(tmp_path, env)
    result = a("pull", "--apply")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert journal_a.read_text() == '{"n": 1}\n{"n": "laptop"}\n'
