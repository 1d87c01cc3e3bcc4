"""What a pull's plan looks at on disk: nothing under a folder this home does not have."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet import Device
from roam_core.engine import plan as plan_module


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path `stat`ed or `lstat`ed (os.path.isdir, lexists... included) by a plan."""
    seen: list[str] = []
    planning = [False]

    def spy(original: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def call(path: object, *args: object, **kwargs: object) -> os.stat_result:
            if planning[0] and isinstance(path, str | os.PathLike):
                seen.append(os.fspath(path))
            return original(path, *args, **kwargs)
        return call

    build = plan_module.Planner.build

    def watched(self: plan_module.Planner) -> plan_module.Plan:
        planning[0] = True
        try:
            return build(self)
        finally:
            planning[0] = False

    monkeypatch.setattr(os, "stat", spy(os.stat))
    monkeypatch.setattr(os, "lstat", spy(os.lstat))
    monkeypatch.setattr(plan_module.Planner, "build", watched)
    yield seen


def test_a_plan_for_an_empty_home_looks_under_no_missing_folder(
        make_device: Callable[..., Device], looks: list[str]) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul\n")
    for skill in range(3):
        for name in ("SKILL.md", "notes.md", "refs/one.md", "refs/deep/two.md"):
            a.write(f"skills/s{skill}/{name}", f"{skill} {name}\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull").code == 0  # the plan only
    under_missing = [path for path in looks
                     if Path(path).is_relative_to(b.root / "skills")
                     and Path(path) != b.root / "skills"]
    assert under_missing == [], under_missing
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert b.read("skills/s2/refs/deep/two.md") == "2 refs/deep/two.md\n"


def test_a_plan_looks_once_per_new_file_in_an_existing_folder(
        make_device: Callable[..., Device], looks: list[str]) -> None:
    """A new file in a folder this home has may find a folder at its place: that is looked
    for (a type change), and nothing else per file."""
    a, b = make_device("a"), make_device("b")
    a.write("skills/s1/SKILL.md", "one\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    for index in range(20):
        a.write(f"skills/s1/new{index}.md", f"{index}\n")
    assert a.roam("push").code == 0
    looks.clear()
    assert b.roam("pull").code == 0
    per_file = [path for path in looks if os.path.basename(path).startswith("new")]
    assert len(per_file) <= 20, per_file


class _CountedList(list):
    """A list that counts the membership tests made on it."""

    tests = 0

    def __contains__(self, item: object) -> bool:
        _CountedList.tests += 1
        return super().__contains__(item)


def test_a_plan_scans_the_unseen_list_at_most_once(
        make_device: Callable[..., Device], monkeypatch: pytest.MonkeyPatch) -> None:
    """The paths a device's rules hid (`unseen`, a list in the state) are looked up in a
    set: a test per path of the list made a narrow device's plan paths x hidden paths."""
    a, b = make_device("a"), make_device("b")
    for index in range(30):
        a.write(f"skills/private/ref{index}.md", f"{index}\n")
        a.write(f"skills/common/ref{index}.md", f"{index}\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    (b.root / "roam").mkdir()
    (b.root / "roam" / "rules.yaml").write_text("local:\n  - skills/private/\n")
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    a.write("skills/common/ref0.md", "changed\n")
    assert a.roam("push").code == 0
    init = plan_module.Planner.__init__

    def counted(self: plan_module.Planner, session: object, state: object, *args: object,
                **kwargs: object) -> None:
        state.unseen = _CountedList(state.unseen)  # type: ignore[attr-defined]
        init(self, session, state, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_module.Planner, "__init__", counted)
    _CountedList.tests = 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert b.read("skills/common/ref0.md") == "changed\n"
    assert _CountedList.tests <= 1, _CountedList.tests
