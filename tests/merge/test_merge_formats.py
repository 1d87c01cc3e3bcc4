"""Entry-structured formats registered by plugins through the `roam_merge_formats` hook."""

from __future__ import annotations

import types

import pytest

from roam_core.errors import PluginError
from roam_core.hookspecs import hookimpl
from roam_core.manager import PluginManager
from roam_core.merge import (
    MEMORY_FORMAT,
    format_for,
    merge_file,
    merge_formats,
    merge_json_lines,
    merge_memory,
)
from roam_core.types import MergeFormat


def plugin(*formats: MergeFormat) -> types.ModuleType:
    """A plugin module, as an entry point would load one."""
    @hookimpl
    def roam_merge_formats():  # type: ignore[no-untyped-def]
        yield from formats

    module = types.ModuleType("merge_plugin")
    module.roam_merge_formats = roam_merge_formats  # type: ignore[attr-defined]
    return module


def manager_with(*plugins: types.ModuleType) -> PluginManager:
    manager = PluginManager(group="roam.tests.none")
    for index, item in enumerate(plugins):
        manager.register(item, f"fmt{index}")
    return manager


JOURNAL = MergeFormat("journal", ("journal/*.jsonl", "profiles/*/journal/*.jsonl"),
                      merge_json_lines, "a JSON-lines journal")


def test_a_plugin_registers_a_json_lines_format() -> None:
    manager = manager_with(plugin(JOURNAL))
    assert manager.merge_formats() == [JOURNAL]
    formats = merge_formats(manager)
    assert formats == [MEMORY_FORMAT, JOURNAL]
    assert format_for("journal/2024.jsonl", formats) is JOURNAL
    assert format_for("memories/MEMORY.md", formats) is MEMORY_FORMAT
    assert format_for("journal/sub/2024.jsonl", formats) is None
    base = b'{"n": 1}\n'
    result = merge_file("journal/2024.jsonl", base, base + b'{"n": 2}\n', base + b'{"n": 3}\n',
                        formats)
    assert result is not None
    assert result.data == b'{"n": 1}\n{"n": 2}\n{"n": 3}\n'
    assert result.added_remote == 1
    assert merge_file("journal/2024.jsonl", base, b"not json\n", base, formats) is None
    assert merge_file("notes.txt", None, b"a", b"b", formats) is None


def test_core_memory_format_comes_first() -> None:
    shadow = MergeFormat("aaa-shadow", ("memories/*.md",), lambda *a, **k: None)
    formats = merge_formats(manager_with(plugin(shadow)))
    assert format_for("memories/MEMORY.md", formats) is MEMORY_FORMAT
    assert format_for("memories/NOTES.md", formats) is shadow
    assert MEMORY_FORMAT.merge is merge_memory


def test_duplicate_format_names_fail_naming_both() -> None:
    manager = manager_with(plugin(JOURNAL), plugin(JOURNAL))
    with pytest.raises(PluginError, match="two merge formats are named 'journal'"):
        manager.merge_formats()


def test_a_merge_that_returns_something_else_is_ignored() -> None:
    odd = MergeFormat("odd", ("odd.txt",), lambda *a, **k: "not an EntryMerge")
    assert merge_file("odd.txt", None, b"a", b"b", [odd]) is None


def test_the_memory_format_through_merge_file() -> None:
    result = merge_file("profiles/w/memories/USER.md", b"a", b"a\n\xc2\xa7\nb", b"a\n\xc2\xa7\nc",
                        merge_formats(manager_with()))
    assert result is not None and result.data == "a\n§\nb\n§\nc".encode()
