"""The engine reads the scope and core's settings through their typed records.

`getattr(scope, "host_keys", ())` and `settings.get("redact_patterns")` hide a renamed
attribute or setting from mypy: the read quietly returns its default. The areas below read
`ScopeModel` attributes and `CoreSettings` fields instead; this test keeps them that way.
"""

from __future__ import annotations

import ast
from pathlib import Path

from roam_core.settings import DEFAULTS

PACKAGE = Path(__file__).resolve().parents[2] / "roam_core" / "src" / "roam_core"

#: Where the typed reads are done (other engineers' areas follow as they are touched).
TYPED = ("engine/status.py", "engine/memo.py", "engine/plan.py", "engine/push.py",
         "engine/prune.py", "engine/rotate.py", "mirror", "secretscan")


def _files() -> list[Path]:
    found: list[Path] = []
    for name in TYPED:
        path = PACKAGE / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def untyped_reads(source: str) -> list[str]:
    """`getattr`/`hasattr` on a scope, and `<settings>.get("<core setting>")`, in `source`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        on_scope = isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") \
            and "scope" in _name(node.args[0])
        raw_setting = isinstance(func, ast.Attribute) and func.attr == "get" \
            and _name(func.value).endswith("settings") \
            and isinstance(node.args[0], ast.Constant) and node.args[0].value in DEFAULTS
        if on_scope or raw_setting:
            found.append(ast.unparse(node))
    return found


def test_scope_and_core_settings_are_read_typed() -> None:
    found = {str(path.relative_to(PACKAGE)): reads for path in _files()
             if (reads := untyped_reads(path.read_text(encoding="utf-8")))}
    assert not found, f"read the typed ScopeModel / CoreSettings instead: {found}"


def test_the_check_sees_an_untyped_read() -> None:
    planted = ("keys = tuple(getattr(scope, 'host_keys', ()))\n"
               "ok = hasattr(session.scope, 'profiles')\n"
               "sinks = session.settings.get('mirror_sinks')\n"
               "other = options.get('mirror_sinks')\n")
    assert len(untyped_reads(planted)) == 3
