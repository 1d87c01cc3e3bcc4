"""SIGKILL at every journal step of installs that change a path's type (issue 18).

A file that became a folder, a folder that became a file, and the same over a local edit
taken with `--overwrite-conflicts`: after each kill the next command recovers, the home is
byte-identical to before or after (never a mix, never a file lost), and no temp is left.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, fast_dir, stores

KILL = "ROAM_TEST_KILL_AT"


@pytest.fixture
def pair() -> Iterator[tuple[Home, Home]]:
    with fast_dir("roam-shape-kill-") as tmp_path, stores("local", tmp_path, None) as store:
        runner = Runner()
        yield Home(tmp_path / "a", "a", store, runner), Home(tmp_path / "b", "b", store, runner)


def _to_folder(a: Home, b: Home) -> None:
    (a.root / "skills/s1/notes.md").unlink()
    a.write("skills/s1/notes.md/inner.md", "inner\n")
    a.write("skills/s1/notes.md/deeper/more.md", "more\n")


def _to_file(a: Home, b: Home) -> None:
    shutil.rmtree(a.root / "skills/s1/tree")
    a.write("skills/s1/tree", "a file now\n")


def _both(a: Home, b: Home) -> None:
    _to_folder(a, b)
    _to_file(a, b)


def _both_over_local(a: Home, b: Home) -> None:
    _both(a, b)
    b.write("skills/s1/notes.md", "b's own edit\n")
    b.write("skills/s1/tree/mine.md", "only on b\n")


#: one install turns a file into a folder and a folder into a file; then the same over
#: local changes in the way, taken with --overwrite-conflicts
CHANGES: dict[str, tuple[Callable[[Home, Home], None], tuple[str, ...]]] = {
    "both-ways": (_both, ()),
    "both-ways-over-local-changes": (_both_over_local, ("--overwrite-conflicts",)),
}


def _points(count: int, rels: list[str]) -> list[str]:
    # staging writes nothing in the home: its first and last steps stand for the rest
    return ["journal:staged", *(f"journal:stage:{rel}" for rel in {rels[0], rels[-1]}),
            "journal:synced",
            *(f"journal:op:{i}" for i in range(count)), "journal:installed",
            "journal:committed", "journal:done"]


def _twin(home: Home, name: str) -> Home:
    root = home.root.with_name(name)
    if root.exists():
        shutil.rmtree(root)
    return home.copy(root)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_type_change_install_killed_at_each_step(pair: tuple[Home, Home], change: str) -> None:
    a, b = pair
    make, flags = CHANGES[change]
    a.write("SOUL.md", "soul\n")
    a.write("skills/s1/notes.md", "notes\n")
    a.write("skills/s1/tree/x/inner.md", "inner\n")
    a.write("skills/s1/tree/y.md", "y\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    make(a, b)
    assert a.roam("push").code == 0
    control = _twin(b, "control")
    applied = control.roam("pull", "--apply", *flags)
    assert applied.code == 0, applied.out + applied.err
    after = control.files()
    before = b.files()
    assert before != after
    plan = b.roam("pull", "--json", *flags).json()
    rels = sorted({*plan["added"], *plan["changed"], *plan["removed"],
                   *plan["overwritten_conflicts"]})
    points = _points(len(rels), rels)
    for number, point in enumerate(points):
        twin = _twin(b, f"b{number}")
        result = twin.run("pull", "--apply", *flags, env={KILL: point})
        assert result.returncode == -9, (point, result.stdout, result.stderr)
        recovered = twin.roam("status")
        now = twin.files()
        if point in ("journal:committed", "journal:done"):
            assert now == after, point
        else:
            assert "recovered: rolled back" in recovered.err, (point, recovered.err)
            assert now == before, point
        assert not [p for p in twin.root.rglob("*") if ".roam-tmp-" in p.name], point
        assert not (twin.root / "roam" / "journal.json").exists()
        again = twin.roam("pull", "--apply", *flags)
        assert again.code == 0, (point, again.out, again.err)
        assert twin.files() == after, point
        if flags:  # whatever was in the way is in the backups
            kept = {p.read_bytes() for p in Path(twin.root, "roam", "backups").rglob("*")
                    if p.is_file()}
            assert {b"b's own edit\n", b"only on b\n"} <= kept, point
        shutil.rmtree(twin.root)
