"""The agent tools return JSON, always; `roam_pull` apply is refused unless allowed."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roam_core.errors import ConflictError
from roam_core.hermes import tools
from roam_core.service import verbs
from roam_core.service.verbs import StatusRecord

Call = tuple[str, dict[str, object]]


@dataclass(frozen=True)
class _Answer:
    """A record as a service verb returns it (the tests choose its document)."""

    document: dict[str, Any]
    schema: int = 1
    exit_code: int = 0

    def as_json(self) -> dict[str, Any]:
        return dict(self.document)


def _answer(monkeypatch: pytest.MonkeyPatch, name: str, answer: Callable[..., object]) -> None:
    monkeypatch.setattr(verbs, name, answer)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Record the service verbs the tools call, with their flags (answering `{}`)."""
    seen: list[Call] = []

    def recorder(name: str) -> Callable[..., _Answer]:
        def fake(home: Path | None, notify: Callable[[str], None], **flags: object) -> _Answer:
            seen.append((name, flags))
            return _Answer({})
        return fake

    for name in ("status", "push", "pull"):
        _answer(monkeypatch, name, recorder(name))
    return seen


def _home(make_home: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
          **settings: object) -> Path:
    root = make_home("a", **settings)
    monkeypatch.setenv("HERMES_HOME", str(root))
    return root


def test_schemas_mark_pull_as_the_destructive_one() -> None:
    names = [schema["name"] for schema in tools.SCHEMAS]
    assert names == ["roam_status", "roam_push", "roam_pull"]
    assert set(tools.HANDLERS) == set(names)
    assert "DESTRUCTIVE" in tools.PULL_SCHEMA["description"]
    assert "Read-only" in tools.STATUS_SCHEMA["description"]
    assert set(tools.PULL_SCHEMA["parameters"]["properties"]) == {"apply",
                                                                  "overwrite_conflicts"}
    assert set(tools.PUSH_SCHEMA["parameters"]["properties"]) == {"force", "dry_run"}


@pytest.mark.parametrize("settings", [{}, {"allow_agent_apply": False},
                                      {"allow_agent_apply": "true"},
                                      {"allow_agent_apply": 1}])
def test_pull_apply_refused_by_default(settings: dict[str, object], calls: list[Call],
                                       make_home: Callable[..., Path],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _home(make_home, monkeypatch, **settings)
    answer = json.loads(tools.roam_pull({"apply": True}))
    assert answer["refused"] is True and answer["ok"] is False
    assert "/roam pull apply" in answer["advice"]
    assert "hermes roam pull --apply" in answer["advice"]
    assert calls == []


def test_pull_apply_refused_when_config_unreadable(calls: list[Call], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "broken"
    root.mkdir()
    (root / "config.yaml").write_text("plugins: [unclosed\n  allow_agent_apply: true\n")
    monkeypatch.setenv("HERMES_HOME", str(root))
    with caplog.at_level("WARNING", logger="roam.hermes"):
        assert json.loads(tools.roam_pull({"apply": True}))["refused"] is True
    assert "cannot read allow_agent_apply" in caplog.text and "config.yaml:" in caplog.text
    (root / "config.yaml").write_text("plugins:\n  entries:\n    roam:\n      settings: 7\n")
    assert json.loads(tools.roam_pull({"apply": True}))["refused"] is True
    assert calls == []


def test_pull_apply_allowed_when_configured(calls: list[Call],
                                            make_home: Callable[..., Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _home(make_home, monkeypatch, allow_agent_apply=True)
    answer = json.loads(tools.roam_pull({"apply": True, "overwrite_conflicts": True}))
    assert "refused" not in answer and answer["ok"] is True
    assert calls == [("pull", {"apply": True, "overwrite_conflicts": True})]


def test_pull_plan_and_push_flags(calls: list[Call], make_home: Callable[..., Path],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _home(make_home, monkeypatch)
    json.loads(tools.roam_pull({}))
    json.loads(tools.roam_push({"force": True, "dry_run": "true"}))
    json.loads(tools.roam_push(None))
    assert calls == [("pull", {"apply": False, "overwrite_conflicts": False}),
                     ("push", {"force": True, "dry_run": True}),
                     ("push", {"force": False, "dry_run": False})]
    answer = json.loads(tools.roam_pull({"overwrite_conflicts": True}))
    assert answer["ok"] is False and "apply" in answer["error"]


def test_status_before_init_is_json_and_says_not_to_pull(
        make_home: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _home(make_home, monkeypatch)
    answer = json.loads(tools.roam_status({}))
    assert answer["ok"] is False and answer["remote_ahead"] is False
    assert "do not pull" in answer["advice"]
    assert answer["error"]


def test_status_reports_remote_ahead(monkeypatch: pytest.MonkeyPatch,
                                     make_home: Callable[..., Path]) -> None:
    _home(make_home, monkeypatch)
    ahead = StatusRecord(
        root="/h", device="desk", backend="local", identity="local:/s", local_generation=1,
        dirty=0, changes={"added": [], "changed": [], "removed": []}, conflicts=[],
        entry_conflicts={}, skipped=[], links_at_top=[], reachable=True, remote_generation=2,
        remote_ahead=True, behind=True, ahead=False, fleet_size=2, error=None,
        kept_in_backups=0, secret_findings=[], profiles=[], optional={})
    _answer(monkeypatch, "status", lambda home, notify: ahead)
    answer = json.loads(tools.roam_status({}))
    assert answer["remote_ahead"] is True and answer["result"]["reachable"] is True


def test_push_conflict_is_json(monkeypatch: pytest.MonkeyPatch,
                               make_home: Callable[..., Path]) -> None:
    _home(make_home, monkeypatch)
    def ahead(home: Path, notify: Callable[[str], None], **flags: object) -> _Answer:
        raise ConflictError("remote ahead\nsecond line never shown")

    _answer(monkeypatch, "push", ahead)
    answer = json.loads(tools.roam_push({}))
    assert answer == {"ok": False, "exit_code": 2, "conflict": True, "error": "remote ahead",
                      "advice": "The remote is ahead: pull first, or ask the user."}


def test_a_profile_home_uses_the_root_setting(calls: list[Call],
                                              make_home: Callable[..., Path],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_home("a", allow_agent_apply=True)
    profile = root / "profiles" / "work"
    profile.mkdir(parents=True)
    (profile / "config.yaml").write_text(
        "plugins:\n  entries:\n    roam:\n      settings:\n        allow_agent_apply: false\n")
    monkeypatch.setenv("HERMES_HOME", str(profile))
    answer = json.loads(tools.roam_pull({"apply": True}))
    assert "refused" not in answer
    assert calls == [("pull", {"apply": True, "overwrite_conflicts": False})]


def test_status_with_the_remote_gone_says_not_to_pull(make_home: Callable[..., Path],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from support.inprocess import run_verb

    root = _home(make_home, monkeypatch)
    assert run_verb(["init", "--create-remote"], home=root).ok
    (tmp_path / "store").rename(tmp_path / "store-moved")
    (tmp_path / "store").write_text("not a directory any more\n")
    answer = json.loads(tools.roam_status({}))
    assert answer["ok"] is False and answer["remote_ahead"] is False
    assert "do not pull" in answer["advice"]
    assert answer["result"]["reachable"] is False


def test_long_lists_are_clipped_for_the_model(monkeypatch: pytest.MonkeyPatch,
                                              make_home: Callable[..., Path]) -> None:
    _home(make_home, monkeypatch)
    plan = {"plan": {"added": [f"skills/s{n}/SKILL.md" for n in range(500)]}}
    _answer(monkeypatch, "pull", lambda home, notify, **flags: _Answer(plan))
    added = json.loads(tools.roam_pull({}))["result"]["plan"]["added"]
    assert len(added) == tools.MAX_LIST_ITEMS + 1 and added[-1].startswith("… 450 more")
