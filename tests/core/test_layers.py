"""Layers run one way: faces → service → engine → policy and store → kernel → base.

Every import in roam_core — at module level or inside a function — is checked against the
order in docs/architecture.md. Imports that still run against it are listed in
`KNOWN_BACK_EDGES` with the module pair; the list may only shrink: a new back edge fails, and
so does a listed edge that no longer exists (delete its line).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "roam_core" / "src" / "roam_core"

#: Lowest first. A module may import its own layer or any layer below it.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"errors", "libc", "boundedjson", "home", "__version__", "secrets",
                        "fs"})),
    ("kernel", frozenset({"types", "deadline", "storage", "hookspecs", "manager", "crypto"})),
    ("policy", frozenset({"settings", "scope", "merge", "config", "tiers", "mirror",
                          "secretscan", "store"})),
    # the conformance suites drive a plugin the way the engine does
    ("engine", frozenset({"engine", "testing"})),
    # what both faces call, so neither face imports the other
    ("service", frozenset({"service"})),
    # `plugin` is the face plugins see: it re-exports what they may use from every layer
    ("faces", frozenset({"cli", "hermes", "plugin"})),
)
RANK = {part: rank for rank, (_name, parts) in enumerate(LAYERS) for part in parts}
#: The two faces share the layer but never import each other.
FACES = frozenset({"cli", "hermes"})

KNOWN_BACK_EDGES: frozenset[tuple[str, str]] = frozenset()


def _part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "roam_core"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    name = ".".join(rel.parts)
    return name.removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "roam_core":
                found.update(f"roam_core.{alias.name}" for alias in node.names)
            elif node.module.startswith("roam_core."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names
                         if alias.name.startswith("roam_core."))
    return found


def back_edges() -> set[tuple[str, str]]:
    """Every (importer, imported) module pair that runs against the layer order."""
    edges: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        here = _part(importer)
        if here not in RANK:
            continue
        for imported in _imports(path):
            there = _part(imported)
            if there == here or there not in RANK:
                continue
            if RANK[there] > RANK[here] or (here in FACES and there in FACES):
                edges.add((importer, imported))
    return edges


def test_every_part_of_roam_core_has_a_layer() -> None:
    parts = {_part(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert parts - {"roam_core"} <= set(RANK), sorted(parts - set(RANK) - {"roam_core"})


def test_no_new_import_runs_against_the_layers() -> None:
    new = back_edges() - KNOWN_BACK_EDGES
    assert not new, "imports against the layer order (see docs/architecture.md): " + ", ".join(
        f"{a} -> {b}" for a, b in sorted(new))


def test_the_known_back_edges_are_still_there() -> None:
    gone = KNOWN_BACK_EDGES - back_edges()
    assert not gone, "fixed back edges: delete them from KNOWN_BACK_EDGES: " + ", ".join(
        f"{a} -> {b}" for a, b in sorted(gone))


def layer_map() -> str:
    """The layer map as measured from the code: each layer's parts, then the back edges.

    Module counts are left out on purpose: adding a module to a part must not make the
    architecture doc stale (adding a part already fails the test above).
    """
    present = {_part(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    lines = [f"{name:<8} {', '.join(sorted(parts & present))}"
             for name, parts in reversed(LAYERS)]
    edges = sorted(back_edges())
    lines.append(f"back edges: {len(edges)}")
    lines.extend(f"  {importer} -> {imported}" for importer, imported in edges)
    return "\n".join(lines)


def test_the_architecture_doc_shows_the_measured_map() -> None:
    doc = (PACKAGE.parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"```text\n{layer_map()}\n```" in doc, (
        "regenerate the map in docs/architecture.md: python tests/core/test_layers.py\n"
        + layer_map())


def test_the_check_sees_a_planted_back_edge(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from roam_core.cli import main\n")
    assert "roam_core.cli" in _imports(planted)


if __name__ == "__main__":
    print(layer_map())
