"""SIGKILL at every write step of push, and at every journal step of restore and merging pulls.

tests/engine/test_crash.py kills a plain pull on the local backend; this suite adds push (on
local, S3 and git, whose writes differ), `restore --apply`, and a pull whose install merges
config.yaml and a memory file, deletes and adds (the journal is the same on every backend).
After each kill the next command recovers, the home is byte-identical to before or after
(never a mix) and the store passes `roam check`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from campaign.harness import Home, Runner, fast_dir, stores

pytest_plugins = ("support.s3_servers",)

KILL = "ROAM_TEST_KILL_AT"
#: `state:written`: the state's rows are written, its transaction not yet committed
PUSH_POINTS = ("push:packs", "push:trees", "push:snapshot", "push:head", "push:state",
               "state:written")
AFTER_HEAD = ("push:head", "push:state", "state:written")


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Home, Home]]:
    kind = getattr(request, "param", "local")
    with fast_dir("roam-kill-") as tmp_path, stores(kind, tmp_path, request) as store:
        runner = Runner()
        yield Home(tmp_path / "a", "a", store, runner), Home(tmp_path / "b", "b", store, runner)


def _killed(home: Home, point: str, *args: str) -> None:
    result = home.run(*args, env={KILL: point})
    assert result.returncode == -9, (point, result.stdout, result.stderr)


def _checked(home: Home) -> dict:
    result = home.roam("check", "--read-data", "--json")
    assert result.code == 0, result.out + result.err
    return result.json()


def _no_temps(home: Home) -> None:
    assert not [p for p in home.root.rglob("*") if ".roam-tmp-" in p.name]


@pytest.mark.parametrize("pair", ["local", "s3", "git"], indirect=True)
@pytest.mark.parametrize("point", PUSH_POINTS)
def test_push_killed_at_each_write_step(pair: tuple[Home, Home], point: str) -> None:
    a, b = pair
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/one/SKILL.md", "one v1\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    a.write("SOUL.md", "soul v2\n")
    a.write("skills/two/SKILL.md", "brand new, so new blobs and trees\n" * 50)
    before = a.files()
    _killed(a, point, "push")
    assert a.files() == before  # a push never touches the home
    report = _checked(b)
    assert report["head_generation"] == (2 if point in AFTER_HEAD else 1), point
    if point in AFTER_HEAD:
        # HEAD moved but the state did not: the device only thinks it is behind
        assert a.roam("push").code == 2
        pulled = a.roam("pull", "--apply", "--json")
        assert pulled.code == 0, pulled.err
        assert a.files() == before, "pulling its own generation back changed nothing"
        assert "nothing to push" in a.roam("push").out
    else:
        pushed = a.roam("push", "--json")
        assert pushed.code == 0, pushed.err
        assert pushed.json()["generation"] == 2
    assert a.files() == before
    assert b.roam("pull", "--apply").code == 0
    assert b.files()["SOUL.md"] == b"soul v2\n"
    assert b.files()["skills/two/SKILL.md"] == before["skills/two/SKILL.md"]
    assert _checked(b)["head_generation"] == 2
    _no_temps(a)


RESTORE_BEFORE = ("journal:staged", "journal:stage:SOUL.md", "journal:synced", "journal:op:0",
                  "journal:installed", "state:written")
RESTORE_AFTER = ("journal:committed", "journal:done")


@pytest.mark.parametrize("point", RESTORE_BEFORE + RESTORE_AFTER)
def test_restore_killed_at_each_journal_step(pair: tuple[Home, Home], point: str) -> None:
    a, _b = pair
    a.write("SOUL.md", "soul v1\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    a.write("SOUL.md", "soul v2\n")
    assert a.roam("push").code == 0
    a.write("SOUL.md", "an edit never pushed\n")
    before = a.files()
    _killed(a, point, "restore", "SOUL.md", "--generation", "1", "--apply")
    recovered = a.roam("status")
    after = a.files()
    if point in RESTORE_BEFORE:
        assert "recovered: rolled back" in recovered.err, recovered.err
        assert after == before, point
    else:
        assert after == {**before, "SOUL.md": b"soul v1\n"}, point
        backups = {p.read_bytes() for p in (a.root / "roam" / "backups").rglob("SOUL.md")}
        assert b"an edit never pushed\n" in backups, "the replaced edit was backed up"
    assert not (a.root / "roam" / "journal.json").exists()
    _no_temps(a)
    assert a.roam("restore", "SOUL.md", "--generation", "1", "--apply").code == 0
    assert a.files()["SOUL.md"] == b"soul v1\n"
    _checked(a)


def _round(a: Home, b: Home, n: int) -> None:
    """A publishes a change of every kind; B changes the same memory file and config."""
    a.write("SOUL.md", f"soul round {n}\n")
    memory = (a.root / "memories/MEMORY.md").read_text()
    a.write("memories/MEMORY.md", f"{memory}\n§\nfrom a, round {n}")
    a.write("config.yaml", (a.root / "config.yaml").read_text().replace(
        f"default: r{n - 1}", f"default: r{n}"))
    a.write(f"skills/add{n:02d}/SKILL.md", f"added in round {n}\n")
    (a.root / f"skills/add{n - 1:02d}/SKILL.md").unlink()
    assert a.roam("push").code == 0
    memory = (b.root / "memories/MEMORY.md").read_text()
    b.write("memories/MEMORY.md", f"{memory}\n§\nfrom b, round {n}")
    b.write("config.yaml", (b.root / "config.yaml").read_text().replace(
        f"max_turns: {n - 1}", f"max_turns: {n}"))


def _ops(b: Home) -> list[str]:
    """The paths B's next install touches, in journal order (the planner's order)."""
    from roam_core.engine.plan import Planner
    from roam_core.engine.remote import require_remote
    from roam_core.engine.session import Session
    from roam_core.home import resolve_home

    with pytest.MonkeyPatch.context() as patch:
        for name, value in b.store.env().items():
            patch.setenv(name, value)
        session = Session.open(resolve_home(b.root), "pull")
        try:
            state = session.require_state()
            plan = Planner(session, state, require_remote(session, state)).build()
        finally:
            session.close()
    return [op.rel for op in plan.ops]


def _after(b: Home) -> dict[str, bytes]:
    """What B's home holds once the pending pull is installed (a control copy does it)."""
    control = b.copy(b.root.with_name("control"))
    try:
        assert control.roam("pull", "--apply").code == 0
        return control.files()
    finally:
        shutil.rmtree(control.root)


def test_merging_pull_killed_at_each_journal_step(pair: tuple[Home, Home]) -> None:
    a, b = pair
    for home in (a, b):
        with (home.root / "config.yaml").open("a") as handle:
            handle.write("model:\n  default: r0\nagent:\n  max_turns: 0\n")
    a.write("SOUL.md", "soul\n")
    a.write("memories/MEMORY.md", "first entry")
    a.write("skills/add00/SKILL.md", "added in round 0\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    _round(a, b, 1)
    rels = _ops(b)
    assert len(rels) == 5 and "config.yaml" in rels and "memories/MEMORY.md" in rels, rels
    before_commit = ["journal:staged", *(f"stage:{i}" for i in range(5)), "journal:synced",
                     *(f"journal:op:{i}" for i in range(5)), "journal:installed"]
    points = [*before_commit, "journal:committed", "journal:done"]
    for number, point in enumerate(points, start=1):
        if number > 1:
            _round(a, b, number)
        rels = _ops(b)
        name = f"journal:stage:{rels[int(point[6:])]}" if point.startswith("stage:") else point
        before, after = b.files(), _after(b)
        assert before != after
        _killed(b, name, "pull", "--apply")
        recovered = b.roam("status")
        now = b.files()
        if point in before_commit:
            assert "recovered: rolled back" in recovered.err, (name, recovered.err)
            assert now == before, name
        else:
            assert now == after, name
        _no_temps(b)
        assert b.roam("pull", "--apply").code == 0
        assert b.files() == after, name
    assert "from b, round" in (b.root / "memories/MEMORY.md").read_text()
    _checked(b)

