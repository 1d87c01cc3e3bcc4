"""`/roam`: every form is validated before anything runs; answers are short, no tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roam_core.hermes import slash
from roam_core.service import doctor, views
from roam_core.service.outcome import Outcome, Record
from support.inprocess import run_verb


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
    def never(*args: object, **kwargs: object) -> Outcome[Record]:
        raise AssertionError("a rejected form must not run anything")

    monkeypatch.setattr(slash, "call", never)
    answer = slash.handle(raw)
    assert answer.startswith("roam: ")
    assert hint in answer
    assert slash.USAGE in answer


def _cli_answer(form: slash.SlashPlan, root: Path) -> str:
    """What /roam answered when it ran the CLI verb in-process and condensed its output."""
    text = form.title in slash.TEXT_FORMS
    argv = ["sessions", "list"] if form.argv == ("sessions",) else list(form.argv)
    result = run_verb(argv if text else [*argv, "--json"], home=root)
    if result.code != 0 and not result.stdout.strip():
        return f"roam: {result.error or result.stderr.strip()}"
    if text:
        lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
        lines = [line for line in lines if line]
    else:
        lines = slash.json_lines(result.json(), form.limit)
    if result.code != 0:
        lines.append(f"(exit {result.code})")
    return "\n".join(lines)


def _steady(answer: str) -> str:
    """The answer without what two runs measure differently (`*_seconds` timings)."""
    return "\n".join(line for line in answer.splitlines() if "_seconds: " not in line)


def test_every_form_answers_as_the_cli_verb_did(make_home: Callable[..., Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read-only form calls the service its CLI verb calls: the same answer."""
    root = make_home("desk")
    monkeypatch.setenv("HERMES_HOME", str(root))
    for raw in ("status", "doctor"):  # not set up yet: the errors match too
        form = slash.plan(raw)
        assert form is not None
        assert slash.handle(raw) == _cli_answer(form, root), raw
    assert run_verb(["init", "--create-remote"], home=root).ok
    (root / "SOUL.md").write_text("first\n")
    assert run_verb(["push"], home=root).ok
    (root / "SOUL.md").write_text("second\n")
    for raw in ("status", "diff", "devices", "sessions", "auto", "doctor", "history",
                "pull", "push dry"):
        form = slash.plan(raw)
        assert form is not None
        answer = slash.handle(raw)
        assert _steady(answer) == _steady(_cli_answer(form, root)), raw
        assert answer and "Traceback" not in answer


@dataclass(frozen=True)
class _Doc:
    """A record carrying a given `--json` document (for the rendering rules alone)."""

    document: Any
    code: int = 0
    schema: int = 1

    @property
    def exit_code(self) -> int:
        return self.code

    def as_json(self) -> Any:
        return self.document


def _outcome(record: Any = None, code: int = 0, error: str = "") -> Outcome[Record]:
    return Outcome(code, record, error)


def test_render_json_has_no_tables_and_caps_lists() -> None:
    plan = slash.plan("history")
    assert plan is not None
    rows = [{"generation": n, "device": f"d{n}"} for n in range(25)]
    text = slash.render(plan, _outcome(views.RowsRecord(rows)))
    lines = text.splitlines()
    assert lines[0] == "• device=d0, generation=0"
    assert len([line for line in lines if line.startswith("•")]) == 10
    assert lines[-1] == "… 15 more"


def test_render_dict_and_errors() -> None:
    plan = slash.plan("status")
    assert plan is not None
    text = slash.render(plan, _outcome(_Doc({"dirty": 2, "remote_ahead": True,
                                             "changes": {"added": ["a"]}, "error": None})))
    assert "dirty: 2" in text and "remote_ahead: yes" in text and "error: -" in text
    assert "changes: added=1" in text
    assert "  " not in text
    failed = slash.render(plan, _outcome(code=1, error="remote unreachable: boom"))
    assert failed == "roam: remote unreachable: boom"
    conflict = slash.render(plan, _outcome(code=2, error="the remote is ahead; pull first"))
    assert conflict.startswith("roam (conflict): ")
    unreachable = slash.render(plan, _outcome(_Doc({"reachable": False}, 1), code=1))
    assert unreachable == "reachable: no\n(exit 1)"


def test_render_text_collapses_alignment_and_strips_escapes() -> None:
    plan = slash.plan("doctor")
    assert plan is not None
    record = doctor.DoctorRecord([("key", True, "decodes      ok"),
                                  ("backend", False, "\x1b[31mlocal  gone\x1b[0m")])
    text = slash.render(plan, _outcome(record, code=record.exit_code))
    assert text == "ok key: decodes ok\nFAIL backend: [31mlocal gone[0m\n(exit 1)"


def test_render_caps_length() -> None:
    plan = slash.plan("doctor")
    assert plan is not None
    record = doctor.DoctorRecord([(f"check {n}", True, "x" * 200) for n in range(30)])
    text = slash.render(plan, _outcome(record))
    assert len(text) <= slash.MAX_CHARS


def test_slash_runs_the_real_verb(make_home: Callable[..., Path],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_home("a")
    monkeypatch.setenv("HERMES_HOME", str(root))
    answer = slash.handle("auto")
    assert "auto_push: no" in answer and "auto_pull_shared: no" in answer
    assert "initialized: no" in answer
