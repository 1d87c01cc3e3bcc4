"""Usage errors, global flags and broken pipes, through the real `roam` process."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roam_core.cli.main import build_parser
from support.cli import roam_env, run_roam


def test_mistyped_verb_exits_64_and_suggests_the_verb() -> None:
    result = run_roam("pusj")
    assert result.returncode == 64, result.stderr
    assert "did you mean 'push'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_mistyped_flag_exits_64_and_suggests_the_flag() -> None:
    result = run_roam("push", "--jsn")
    assert result.returncode == 64, result.stderr
    assert "did you mean '--json'?" in result.stderr


def test_mistyped_nested_verb_suggests_too() -> None:
    result = run_roam("backends", "lst")
    assert result.returncode == 64
    assert "did you mean 'list'?" in result.stderr


@pytest.mark.parametrize("before", [True, False])
def test_global_flags_before_or_after_the_verb(tmp_path: Path, before: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    globals_ = ["--home", str(home), "-v", "--json"]
    words = [*globals_, "rules"] if before else ["rules", *globals_]
    result = run_roam(*words)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["root"] == str(home)


def test_json_before_a_verb_without_json_is_a_usage_error(tmp_path: Path) -> None:
    result = run_roam("--json", "init", "--home", str(tmp_path))
    assert result.returncode == 64
    assert "--json" in result.stderr


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = [(path, parser)] if parser.get_default("func") else []
    for action in subs:
        for name, child in action.choices.items():
            found += _leaves(child, (*path, name))
    return found


def test_every_verb_takes_the_global_flags() -> None:
    leaves = _leaves(build_parser())
    assert len(leaves) > 20
    for path, leaf in leaves:
        flags = {flag for action in leaf._actions for flag in action.option_strings}
        assert {"-q", "-v", "--home"} <= flags, path


def test_quiet_after_the_verb_is_accepted(tmp_path: Path) -> None:
    result = run_roam("backends", "list", "-q")
    assert result.returncode == 0, result.stderr


def test_broken_pipe_ends_silently(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "roam_core.cli.main", "--home", str(home), "rules"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=roam_env())
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before roam writes a line: like `| head -0`
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=60)
    assert stderr == ""
    assert code in (0, 141)


def test_verbose_logs_each_remote_request_with_its_time(local_home) -> None:
    assert run_roam("--home", str(local_home.root), "init", env=local_home.env).returncode == 0
    quiet = run_roam("status", "--home", str(local_home.root), env=local_home.env)
    assert quiet.returncode == 0, quiet.stderr
    assert " ms" not in quiet.stderr
    loud = run_roam("status", "-v", "--home", str(local_home.root), env=local_home.env)
    assert loud.returncode == 0, loud.stderr
    assert re.search(r"read_ref HEAD: ok in \d+\.\d ms", loud.stderr), loud.stderr


def test_rules_verbose_logs_each_decision(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("x\n")
    (home / "SOUL.md").write_text("me\n")
    (home / ".env").write_text("A=b\n")
    (home / "logs").mkdir()
    (home / "logs" / "agent.log").write_text("x\n")
    quiet = run_roam("rules", "--home", str(home))
    assert "rules: SOUL.md" not in quiet.stderr
    loud = run_roam("rules", "-v", "--home", str(home))
    assert loud.returncode == 0, loud.stderr
    assert re.search(r"rules: SOUL\.md: shared \(", loud.stderr), loud.stderr
    assert re.search(r"rules: memories/MEMORY\.md: shared \(", loud.stderr)
    assert re.search(r"rules: \.env: (local|ignored) \(", loud.stderr)
    assert re.search(r"rules: logs/: (local|ignored) \(", loud.stderr)
    assert "agent.log" not in loud.stderr  # an ignored folder is one line, not walked
