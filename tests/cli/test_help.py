"""`--help` per verb (description, examples, exit codes), verbs by task, shell completion."""

from __future__ import annotations

import subprocess
from pathlib import Path

from roam_core.cli.helptext import verbs
from roam_core.cli.main import build_parser
from support.cli import run_roam


def test_every_verb_has_a_description_examples_and_exit_codes() -> None:
    found = verbs(build_parser())
    assert len(found) > 20
    for path, parser, _help in found:
        text = parser.format_help()
        assert parser.description, path
        assert "examples:\n  roam " in text, path
        assert "exit codes:" in text and "64  usage error" in text, path


def test_top_level_help_groups_verbs_by_task() -> None:
    text = run_roam("--help").stdout
    titles = [line for line in text.splitlines() if line in (
        "set up:", "sync:", "history:", "diagnostics:", "plugins:")]
    assert titles == ["set up:", "sync:", "history:", "diagnostics:", "plugins:"]
    sync = text.split("sync:")[1].split("history:")[0]
    assert "  push " in sync and "  pull " in sync and "  plugins " not in sync


def _complete(script: Path, *words: str) -> list[str]:
    line = " ".join(words)
    done = subprocess.run(
        ["bash", "-c", f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
         "_roam; printf '%s\\n' \"${COMPREPLY[@]}\""],
        capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completion_completes_verbs_sub_verbs_and_flags(tmp_path: Path) -> None:
    script = tmp_path / "roam.bash"
    result = run_roam("completion", "bash")
    assert result.returncode == 0
    script.write_text(result.stdout)
    assert _complete(script, "roam", "pu") == ["push", "pull"]
    assert _complete(script, "roam", "-v", "backends", "l") == ["list"]
    assert _complete(script, "roam", "config", "s") == ["set"]
    assert "--dry-run" in _complete(script, "roam", "push", "--d")


def test_zsh_and_fish_scripts_come_from_the_same_parser() -> None:
    zsh = run_roam("completion", "zsh").stdout
    assert zsh.startswith("#compdef roam") and "bashcompinit" in zsh and "push" in zsh
    fish = run_roam("completion", "fish").stdout
    assert "complete -c roam -n __fish_use_subcommand -a push" in fish
    assert "complete -c roam -n '__fish_seen_subcommand_from push' -l dry-run" in fish
