"""Issue 23: `roam forget` — plan first, `--apply` records; merge bases and HEAD stay.

Two devices push seven generations on the local backend (and on git, where the record
travels with a ref swap). A forget by policy plans without writing anything, then records an
authenticated forget record; history steps over the forgotten generations, restore names
who forgot one and under which policy, check stays clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign.harness import Home, Runner, stores

pytest_plugins = ("support.s3_servers",)


def _fleet(tmp_path: Path, store: object) -> tuple[Home, Home]:
    runner = Runner()
    desk = Home(tmp_path / "desk", "desk", store, runner)  # type: ignore[arg-type]
    laptop = Home(tmp_path / "laptop", "laptop", store, runner)  # type: ignore[arg-type]
    desk.write("memories/MEMORY.md", "v1\n")
    assert desk.roam("init", "--create-remote").code == 0  # 0
    assert desk.roam("push").code == 0  # 1
    desk.write("memories/MEMORY.md", "v2\n")
    assert desk.roam("push").code == 0  # 2
    assert laptop.roam("init").code == 0
    assert laptop.roam("pull", "--apply").code == 0  # laptop pulled 2
    laptop.write("memories/notes.md", "laptop\n")
    assert laptop.roam("push").code == 0  # 3: laptop last pushed 3
    assert desk.roam("pull", "--apply").code == 0
    for number in (4, 5, 6):
        desk.write("memories/MEMORY.md", f"v{number}\n")
        assert desk.roam("push").code == 0
    return desk, laptop


def _numbers(home: Home) -> list[int]:
    result = home.roam("history", "--json")
    assert result.code == 0, result.err
    return [row["generation"] for row in result.json()]


@pytest.mark.parametrize("kind", ["local", "git"])
def test_forget_plans_then_records_and_keeps_merge_bases(kind: str, tmp_path: Path) -> None:
    # git publishes a put object only with a ref swap: the record must reach the laptop too
    with stores(kind, tmp_path) as store:
        desk, laptop = _fleet(tmp_path, store)
        plan = desk.roam("forget", "--keep-last", "1", "--json")
        assert plan.code == 0, plan.err
        found = plan.json()
        assert found["applied"] is False and found["policy"] == "keep-last 1"
        assert [row["generation"] for row in found["forget"]] == [5, 4, 1, 0]
        reasons = {row["generation"]: row["reasons"] for row in found["keep"]}
        assert reasons[6] == ["last", "protected: HEAD, desk is on it, last pushed by desk"]
        assert reasons[3] == ["protected: last pulled by desk, last pushed by laptop"]
        assert reasons[2] == ["protected: last pulled by laptop"]
        assert _numbers(desk) == [6, 5, 4, 3, 2, 1, 0]  # a plan writes nothing

        applied = desk.roam("forget", "--keep-last", "1", "--apply")
        assert applied.code == 0, applied.err
        assert "forgot 4 generation(s), keeping 3" in applied.out
        assert _numbers(desk) == [6, 3, 2] == _numbers(laptop)
        refused = laptop.roam("restore", "memories/MEMORY.md", "--generation", "4")
        assert refused.code == 1
        assert refused.err.strip().splitlines()[-1].startswith(
            "roam: generation 4 was forgotten by desk on ")
        assert "under policy keep-last 1" in refused.err and "Traceback" not in refused.err
        assert laptop.roam("restore", "memories/MEMORY.md", "--generation", "2",
                           "--apply").code == 0
        assert (laptop.root / "memories/MEMORY.md").read_text() == "v2\n"
        check = desk.roam("check", "--read-data", "--json")
        assert check.code == 0, check.out
        # forgetting again finds nothing more to forget
        again = desk.roam("forget", "--keep-last", "1", "--apply", "--json").json()
        assert again["forget"] == [] and again["applied"] is False


def test_forget_refuses_without_a_policy_or_with_a_bad_duration(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        desk = Home(tmp_path / "desk", "desk", store, Runner())
        assert desk.roam("init", "--create-remote").code == 0
        for args, message in ((("forget",), "roam forget needs a policy"),
                              (("forget", "--keep-within", "30x"), "invalid duration '30x'")):
            result = desk.roam(*args)
            assert result.code == 1 and message in result.err, result.err
            assert len(result.err.strip().splitlines()) == 1
