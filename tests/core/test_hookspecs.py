from __future__ import annotations

import inspect
from pathlib import Path

from roam_core import hookspecs
from roam_core.manager import hook_names

REPO = Path(__file__).resolve().parents[2]


def test_there_are_hooks() -> None:
    assert set(hook_names()) >= {"roam_storage_backends", "roam_scope_rules",
                                 "roam_session_sinks"}


def test_every_hookspec_has_a_docstring() -> None:
    for name in hook_names():
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 80, f"hookspec {name} needs a docstring that states its contract"


def test_every_hookspec_has_a_test_and_a_docs_entry() -> None:
    tests = "\n".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py")
                      if p.name != "test_hookspecs.py")
    docs = "\n".join(p.read_text() for p in (REPO / "docs").rglob("*.md"))
    for name in hook_names():
        assert name in tests, f"no test exercises hook {name}"
        assert name in docs, f"docs/ never documents hook {name}"
