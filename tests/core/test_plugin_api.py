"""Plugins import roam_core's published plugin API (`roam_core.plugin`) and nothing else."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import roam_core.plugin as api

REPO = Path(__file__).resolve().parents[2]
#: Every plugin distribution's code and tests, the copyable templates included.
PLUGIN_TREES = [*sorted(REPO.glob("roam_backend_*/src")), *sorted(REPO.glob("roam_sink_*/src")),
                *sorted(REPO.glob("_template/*/src")), *sorted(REPO.glob("_template/*/tests"))]


def _roam_core_imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "roam_core" or node.module.startswith("roam_core."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names
                         if alias.name == "roam_core" or alias.name.startswith("roam_core."))
    return found


def test_there_are_plugin_distributions_to_check() -> None:
    names = {tree.parent.name for tree in PLUGIN_TREES}
    assert {"roam_backend_local", "roam_backend_s3", "roam_backend_git", "roam_sink_discord",
            "roam_backend_example", "roam_sink_example"} <= names


def test_plugins_import_only_the_published_api() -> None:
    offenders = [f"{path.relative_to(REPO)}:{line}: {module}"
                 for tree in PLUGIN_TREES for path in sorted(tree.rglob("*.py"))
                 for line, module in _roam_core_imports(path) if module != "roam_core.plugin"]
    assert not offenders, "import these from roam_core.plugin instead:\n" + "\n".join(offenders)


def test_every_published_name_resolves() -> None:
    assert sorted(api.__all__) == sorted(set(api.__all__))
    for name in api.__all__:
        assert getattr(api, name) is not None, name


def test_the_api_loads_nothing_heavy_until_asked() -> None:
    probe = ("import sys, roam_core.plugin\n"
             "heavy = [m for m in ('pytest', 'roam_core.mirror.spool',"
             " 'roam_core.testing.contract', 'boto3', 'httpx', 'git') if m in sys.modules]\n"
             "print(heavy)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    planted = tmp_path / "plugin.py"
    planted.write_text("def f():\n    from roam_core.mirror.spool import read_json\n")
    assert _roam_core_imports(planted) == [(2, "roam_core.mirror.spool")]
