"""`/roam`: every form is validated before anything runs; answers are short, no tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from roam_core.hermes import slash
from roam_core.hermes.runner import VerbResult


@pytest.mark.parametrize(("raw", "argv"), [
    ("status", ("status",)),
    ("push", ("push",)),
    ("push force", ("push", "--force")),
    ("push dry", ("push", "--dry-run")),
    ("push dry-run", ("push", "--dry-run")),
    ("pull", ("pull",)),
    ("pull apply", ("pull", "--apply")),
    ("PULL Apply Overwrite", ("pull", "--apply", "--overwrite-conflicts")),
    ("diff", ("diff",)),
    ("devices", ("devices",)),
    ("sessions", ("sessions",)),
    ("auto", ("auto", "status")),
    ("doctor", ("doctor",)),
    ("history", ("history",)),
])
def test_valid_forms_map_to_cli_words(raw: str, argv: tuple[str, ...]) -> None:
    plan = slash.plan(raw)
    assert plan is not None
    assert plan.argv == argv


@pytest.mark.parametrize("raw", ["", "   ", "help", "HELP"])
def test_help(raw: str) -> None:
    assert slash.plan(raw) is None
    assert "/roam pull apply" in slash.handle(raw)


@pytest.mark.parametrize(("raw", "hint"), [
    ("push now", "push takes one of"),
    ("push force dry", "push takes one of"),
    ("pull overwrite", "pull forms"),
    ("pull apply now", "pull forms"),
    ("auto on", "hermes roam auto on|off"),
    ("auto off", "hermes roam auto on|off"),
    ("status --json", "takes no further words"),
    ("restore SOUL.md", "unknown /roam form"),
    ("config set backend s3", "unknown /roam form"),
    ("init", "unknown /roam form"),
    ("rm -rf /", "unknown /roam form"),
])
def test_everything_else_is_rejected_before_running(
        raw: str, hint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object, **kwargs: object) -> VerbResult:
        raise AssertionError("a rejected form must not run anything")

    monkeypatch.setattr(slash, "run_verb", never)
    answer = slash.handle(raw)
    assert answer.startswith("roam: ")
    assert hint in answer
    assert slash.USAGE in answer


def test_resolve_argv_uses_json_where_the_verb_has_it() -> None:
    def words(raw: str) -> list[str] | None:
        plan = slash.plan(raw)
        assert plan is not None
        return slash.resolve_argv(plan)

    assert words("status") == ["status", "--json"]
    assert words("push force") == ["push", "--force", "--json"]
    assert words("pull apply") == ["pull", "--apply", "--json"]
    assert words("auto") == ["auto", "status", "--json"]
    assert words("history") == ["history", "--json"]
    assert words("diff") == ["diff"]          # people read these as text
    assert words("doctor") == ["doctor"]
    sessions = words("sessions")
    assert sessions is None or sessions[0] == "sessions"


def test_a_verb_this_installation_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    import roam_core.cli.main as cli_main

    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("listing",))
    assert slash.handle("sessions") == ("roam: /roam sessions is not available in this roam "
                                        "installation")


def _result(code: int = 0, stdout: str = "", error: str = "") -> VerbResult:
    return VerbResult(("x",), code, stdout, "", error, "")


def test_render_json_has_no_tables_and_caps_lists() -> None:
    plan = slash.plan("history")
    assert plan is not None
    rows = ",".join(f'{{"generation": {n}, "device": "d{n}"}}' for n in range(25))
    text = slash.render(plan, _result(stdout=f"[{rows}]"))
    lines = text.splitlines()
    assert lines[0] == "• generation=0, device=d0"
    assert len([line for line in lines if line.startswith("•")]) == 10
    assert lines[-1] == "… 15 more"


def test_render_dict_and_errors() -> None:
    plan = slash.plan("status")
    assert plan is not None
    text = slash.render(plan, _result(stdout='{"dirty": 2, "remote_ahead": true, '
                                             '"changes": {"added": ["a"]}, "error": null}'))
    assert "dirty: 2" in text and "remote_ahead: yes" in text and "error: -" in text
    assert "changes: added=1" in text
    assert "  " not in text
    failed = slash.render(plan, _result(code=1, error="remote unreachable: boom"))
    assert failed == "roam: remote unreachable: boom"
    conflict = slash.render(plan, _result(code=2, error="the remote is ahead; pull first"))
    assert conflict.startswith("roam (conflict): ")


def test_render_text_collapses_alignment_and_strips_escapes() -> None:
    plan = slash.plan("doctor")
    assert plan is not None
    text = slash.render(plan, _result(stdout="key      ok\n\x1b[31mbackend  ok\x1b[0m\n\n"))
    assert text == "key ok\n[31mbackend ok[0m"


def test_render_caps_length() -> None:
    plan = slash.plan("diff")
    assert plan is not None
    text = slash.render(plan, _result(stdout="x" * 10_000))
    assert len(text) <= slash.MAX_CHARS


def test_slash_runs_the_real_verb(make_home: Callable[..., Path],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_home("a")
    monkeypatch.setenv("HERMES_HOME", str(root))
    answer = slash.handle("auto")
    assert "auto_push: no" in answer and "auto_pull_shared: no" in answer
    assert "initialized: no" in answer
