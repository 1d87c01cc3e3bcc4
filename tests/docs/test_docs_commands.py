"""Every command shown in the docs is accounted for, parses, and names things that exist.

Each shell block of README.md, docs/*.md and the template READMEs carries a `doc-test`
marker: either it runs (the user guide's scenarios), or it is parsed here and, where it needs
something that cannot run in a test (a package index, a Hermes install, Discord), the marker
names the test that exercises the same commands (`covered-by=`). Intra-doc links and anchors
resolve, and troubleshooting entries quote messages roam really prints.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from doc_blocks import REPO, Block, blocks, markdown_files, roam_invocations

ALL_BLOCKS = [block for path in markdown_files() for block in blocks(path)]
SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.shell]


def test_there_are_shell_blocks_to_check() -> None:
    assert len(SHELL_BLOCKS) > 30


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda block: block.where)
def test_every_shell_block_is_marked(block: Block) -> None:
    assert block.marked, f"{block.where}: add <!-- doc-test: on=MACHINE --> or parse"
    assert "on" in block.options or "parse" in block.flags, block.where
    covered = block.options.get("covered-by")
    if covered:
        assert (REPO / covered).is_file(), f"{block.where}: {covered} does not exist"


def _roam_commands(block: Block) -> list[list[str]]:
    return [args for line in block.commands() for args in roam_invocations(line)]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda block: block.where)
def test_every_roam_command_parses(block: Block) -> None:
    from roam_core.cli.main import build_parser

    for args in _roam_commands(block):
        try:
            build_parser().parse_args(args)
        except SystemExit as exit_:
            assert exit_.code == 0, f"{block.where}: roam {' '.join(args)} does not parse"


#: Inline code that starts with "roam " but is not a command.
NOT_COMMANDS = {"roam archive v1", "roam <roam@localhost>"}  # an HKDF salt, a git author


def _verbs() -> dict[tuple[str, ...], set[str]]:
    """Every verb path of the CLI with the options it (or the global parser) accepts."""
    from roam_core.cli.main import build_parser

    def options(parser) -> set[str]:
        return {flag for action in parser._actions for flag in action.option_strings}

    parser = build_parser()
    found = {(): options(parser)}
    stack = [((), parser)]
    while stack:
        path, current = stack.pop()
        for action in current._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                for name, child in action.choices.items():
                    found[(*path, name)] = options(child) | found[()]
                    stack.append(((*path, name), child))
    return found


def test_inline_commands_name_real_verbs_and_options() -> None:
    """`roam VERB --option` written inline in prose names a verb and options that exist."""
    verbs = _verbs()
    problems = []
    for page in markdown_files():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for span in re.findall(r"`(?:hermes )?(roam [^`]+)`", text):
            if span in NOT_COMMANDS:
                continue
            words = [w for w in re.split(r"[\s|]+", span)[1:] if w and w not in ("…", "...")]
            path: tuple[str, ...] = ()
            while words and (*path, words[0]) in verbs:
                path, words = (*path, words[0]), words[1:]
            if not path and words and not words[0].startswith("-"):
                problems.append(f"{page.name}: `{span}` names no roam verb")
                continue
            for word in words:
                flag = word.strip("[]").split("=")[0]
                if flag.startswith("--") and flag not in verbs[path]:
                    problems.append(f"{page.name}: `{span}`: roam {' '.join(path)} has no {flag}")
    assert not problems, "\n".join(problems)


def test_covered_commands_appear_in_their_tests() -> None:
    for block in SHELL_BLOCKS:
        covered = block.options.get("covered-by")
        if not covered:
            continue
        source = (REPO / covered).read_text()
        for args in _roam_commands(block):
            verbs = [word for word in args if not word.startswith("-")][:2]
            assert all(f'"{verb}"' in source for verb in verbs), (
                f"{block.where}: {covered} does not run roam {' '.join(verbs)}")


def test_pip_extras_exist() -> None:
    project = tomllib.loads((REPO / "roam_core" / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    for block in SHELL_BLOCKS:
        for line in block.commands():
            for extra in re.findall(r"roam-core\[(\w+)\]", line):
                assert extra in extras, f"{block.where}: no extra {extra!r} in roam-core"


def test_repository_paths_in_install_commands_exist() -> None:
    for block in SHELL_BLOCKS:
        for line in block.commands():
            for path in re.findall(r"\s\./(\S+)", line):
                assert (REPO / path).exists(), f"{block.where}: ./{path} does not exist"


def test_code_excerpts_match_the_templates() -> None:
    excerpts = [block for block in ALL_BLOCKS if "excerpt" in block.options]
    assert len(excerpts) >= 4
    for block in excerpts:
        source = (REPO / block.options["excerpt"]).read_text(encoding="utf-8")
        assert block.text in source, f"{block.where}: excerpt no longer matches the file"


# -- links -----------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    found = {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}
    found |= set(re.findall(r'<a id="([^"]+)"></a>', text))
    return found


def test_links_between_pages_resolve() -> None:
    problems = []
    for page in markdown_files():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (page.parent / file_part).resolve() if file_part else page
            if not resolved.exists():
                problems.append(f"{page.name}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                problems.append(f"{page.name}: {target} (no such anchor)")
    assert not problems, "\n".join(problems)


# -- troubleshooting -------------------------------------------------------------------


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level constants (message parts such as KEY_ENV or KEY_BYTES)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str | int)):
            found[node.targets[0].id] = str(node.value.value)
    return found


def _part(part: ast.expr, constants: dict[str, str]) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    if (isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name)
            and part.value.id in constants):
        return constants[part.value.id]
    return "\0"


def _message_texts() -> list[str]:
    """Every string literal in roam's code, module constants filled in, other holes \\0."""
    texts: list[str] = []
    for path in REPO.glob("roam_*/src/**/*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
            elif isinstance(node, ast.JoinedStr):
                texts.append("".join(_part(part, constants) for part in node.values))
    return texts


TROUBLE = REPO / "docs" / "troubleshooting.md"


def _quoted_messages() -> list[str]:
    return re.findall(r"^### `roam: (.+)`$", TROUBLE.read_text(encoding="utf-8"), re.M)


def test_troubleshooting_quotes_real_messages() -> None:
    messages = _quoted_messages()
    assert len(messages) >= 15
    texts = [text for text in _message_texts() if len(text) < 600]
    for message in messages:
        quoted = re.sub(r"<[^>]+>", "…", message)
        pieces = [piece for piece in quoted.split("…") if len(piece.strip()) >= 6]
        candidates = [text for text in texts
                      if any(piece[:10] in text or piece[-10:] in text for piece in pieces)]
        assert any(_compatible(quoted, text) or _compatible(f"roam: {quoted}", text)
                   for text in candidates), (
            f"troubleshooting.md quotes a message roam never prints: {message!r}")


def _compatible(quoted: str, code: str) -> bool:
    """Whether some printed text matches both: the doc's `…` and the code's holes (\\0)
    each stand for any text."""
    doc, src = quoted, code
    rows = len(doc) + 1
    # reachable[i][j]: doc[i:] and src[j:] can still describe one string
    reachable = [[False] * (len(src) + 1) for _ in range(rows)]
    reachable[len(doc)][len(src)] = True
    for i in range(len(doc), -1, -1):
        for j in range(len(src), -1, -1):
            if i == len(doc) and j == len(src):
                continue
            d = doc[i] if i < len(doc) else None
            c = src[j] if j < len(src) else None
            ok = False
            if d == "…":
                ok = reachable[i + 1][j] or (c is not None and reachable[i][j + 1])
            if not ok and c == "\0":
                ok = reachable[i][j + 1] or (d is not None and reachable[i + 1][j])
            if not ok and d is not None and c is not None and d == c:
                ok = reachable[i + 1][j + 1]
            reachable[i][j] = ok
    return reachable[0][0]
