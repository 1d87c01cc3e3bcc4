"""The benchmark page's keeping rules and bench/world.py's verdicts and bad input.

docs/benchmarks.md is rewritten by several scripts: bench/run.py rewrites the whole page and
must carry over every block another script keeps (`<!-- kept:NAME -->`), with bench/world.py's
block first; bench/world.py rewrites only its block. The world block's `met` column applies
issue 22's targets, requests included, to the numbers the parts saved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import report
import world
import world_page
from measure import Sample
from scenarios import Result


def _kept(name: str, body: str) -> str:
    return f"<!-- kept:{name} -->\n## {name}\n\n{body}\n<!-- /kept:{name} -->"


def _page(*blocks: str) -> str:
    return "\n\n".join([report.TITLE, "## Results\n\nstale table", *blocks, "## Notes\n- old"])


def _write(path: Path) -> None:
    result = Result("2", "first push of `small`", "small", "≤ 1.0× restic backup",
                    ratio_target=1.0)
    result.roam.add(Sample(1.0, 50.0, 0, "", ""))
    result.restic.add(Sample(2.0, 60.0, 0, "", ""))
    report.write(path, [result], machine={"cpu": "test"}, rates={}, restic_version="restic",
                 runs=1, load=("1", "2"), weight_check="not checked", quick=True, unmet=[])


def test_a_rewrite_keeps_every_kept_block(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    others = [_kept("git-network-large", "| a | b |\n|---|---|\n| 1 | 2 |"),
              _kept("secret-scan", "62 % → 19 %"), _kept("pull-local", "216 MiB")]
    world_block = _kept(report.WORLD, "the one harness run")
    page.write_text(_page(others[0], world_block, *others[1:]))
    _write(page)
    text = page.read_text()
    for block in [world_block, *others]:
        assert text.count(block) == 1, block
    assert text.index(world_block) < text.index("## On a local disk") < text.index(others[0])
    assert "stale table" not in text
    _write(page)  # a second rewrite changes nothing it keeps
    assert all(page.read_text().count(block) == 1 for block in [world_block, *others])


def test_the_world_block_goes_on_top_and_is_replaced_in_place() -> None:
    page = _page(_kept("secret-scan", "x"))
    first = report.put_world(page, _kept(report.WORLD, "run one"))
    assert first.index("run one") < first.index("## Results")
    assert first.startswith(report.TITLE)
    second = report.put_world(first, _kept(report.WORLD, "run two"))
    assert "run one" not in second and second.count("<!-- kept:world -->") == 1
    assert second.replace("run two", "run one") == first


def _net_row(scenario: str, roam: float, restic: float, requests: tuple[int, int],
             ratio_target: float) -> dict:
    def summary(count: int) -> dict:
        return {"requests": count, "connections": 1, "waves": 3, "max_in_flight": 1,
                "by_method": {"GET": count}}
    return {"key": "N2", "scenario": scenario, "rtt_ms": 40, "target": "≤ target",
            "ratio_target": ratio_target, "roam": [{"wall": roam, "rss_mib": 100.0}],
            "restic": [{"wall": restic, "rss_mib": 90.0}],
            "roam_requests": [summary(requests[0])],
            "restic_requests": [summary(requests[1])], "notes": ["advertise 1"]}


def test_a_network_cell_meets_its_target_only_with_its_requests() -> None:
    fast_but_chatty = _net_row("first push", 9.0, 10.0, (120, 39), 1.0)
    fast_and_few = _net_row("first push", 9.0, 10.0, (71, 39), 1.0)
    slow = _net_row("first push", 11.0, 10.0, (71, 39), 1.0)
    status = _net_row("status, nothing changed", 1.0, 4.0, (1, 14), 0.3)
    assert [world_page.net_met(r)[0] for r in (fast_but_chatty, fast_and_few, slow, status)] \
        == [False, True, False, True]
    assert world_page.net_met(_net_row("status, nothing changed", 1.0, 3.0, (100, 1), 0.3))[0] \
        is False


def _scale_rows(rss: float, written: int) -> list[dict]:
    def samples(wall: float, peak: float = 100.0) -> list[dict]:
        return [{"wall": wall, "rss_mib": peak}]
    return [{"scenario": "first push", "roam": samples(10.0, rss), "restic": samples(12.0)},
            {"scenario": "status, full look", "roam": samples(0.5), "restic": samples(6.0)},
            {"scenario": "status, remembered", "roam": samples(0.4), "restic": []},
            {"scenario": "incremental push (10 files)", "roam": samples(2.0),
             "restic": samples(5.0),
             "writes": {"written": [written + 60_000], "store_growth": [60_000],
                        "roam_folder": [40 << 20]}},
            {"scenario": "pull --apply into an empty home", "roam": samples(10.0),
             "restic": samples(11.0)}]


def test_scale_verdicts_count_memory_and_local_writes() -> None:
    good = world_page.scale_cells(_scale_rows(150.0, 200_000))
    assert [c["met"] for c in good] == [True, True, True, True, True]
    assert good[2]["ratio"] == pytest.approx(0.4 / 6.0)  # against the full look's backup
    heavy = world_page.scale_cells(_scale_rows(250.0, 200_000))
    assert heavy[0]["met"] is False
    rewriting = world_page.scale_cells(_scale_rows(150.0, 30 << 20))
    assert rewriting[3]["met"] is False


def _info(part: str, rows: list[dict]) -> dict:
    return {"part": part, "runs": 1, "command": f"python bench/world.py --parts {part}",
            "home": "large", "files": 100_000, "rows": rows, "started": "2026-12-02 03:00 UTC",
            "seconds": 60.0, "load": ["1.0 1.0 1.0", "2.0 2.0 2.0"], "commit": "abc1234",
            "machine": {"cpu": "cpu, 2 cores", "memory": "24 GiB", "kernel": "6",
                        "python": "3.11", "filesystem": "ext4"}, "restic": "restic 0.14"}


def test_compose_writes_one_block_from_the_saved_parts(tmp_path: Path) -> None:
    (tmp_path / "s3.json").write_text(json.dumps(_info("s3", [
        _net_row("first push", 9.0, 10.0, (71, 39), 1.0),
        _net_row("pull --apply into an empty home", 12.0, 10.0, (80, 37), 1.0)])))
    (tmp_path / "scale.json").write_text(json.dumps(_info("scale", _scale_rows(150, 1000))))
    out = tmp_path / "benchmarks.md"
    out.write_text(_page(_kept("secret-scan", "x")))
    assert world.main(["--compose", "--workdir", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert text.count("<!-- kept:world -->") == 1 and "secret-scan" in text
    assert "1 of 2 targets met" in text and "5 of 5 targets met" in text
    assert "load average 1.0 1.0 1.0 at the start, 2.0 2.0 2.0 at the end" in text
    assert "missed, pull --apply into an empty home: bounded by" in text


def test_a_run_asks_for_the_disk_its_leftovers_take() -> None:
    lead = world.parse_args(["--runs", "3", "--scale-runs", "2"])
    smoke = world.parse_args(["--parts", "scale", "--files", "200", "--runs", "1"])
    assert 30 << 30 < world.disk_needed(lead) < 40 << 30
    assert world.disk_needed(smoke) < 5 << 30


@pytest.mark.parametrize("argv, said", [
    (["--parts", "s3,bogus"], "--parts: choose from s3,git,scale"),
    (["--runs", "0"], "--runs and --scale-runs must be"),
    (["--rtt-ms", ","], "--rtt-ms: give at least one"),
    (["--rtt-ms", "0,forty"], "not a comma-separated list"),
])
def test_bad_options_say_so_in_one_line(argv: list[str], said: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        world.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_compose_without_results_or_with_a_broken_file_stops_cleanly(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no part's results in"):
        world.main(["--compose", "--workdir", str(tmp_path), "--out", str(tmp_path / "p.md")])
    (tmp_path / "git.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"cannot read .*git\.json"):
        world.main(["--compose", "--workdir", str(tmp_path), "--out", str(tmp_path / "p.md")])
    assert not (tmp_path / "p.md").exists()


def test_a_failed_part_leaves_the_others_on_the_page_and_exits_non_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts' runners are replaced here (each real one takes minutes): git fails, s3 runs;
    git's results from an earlier run are not composed as if they were this run's."""
    def run_part(part: str, *_args: object) -> dict:
        if part == "git":
            raise world.measure.CommandFailed("roam push… exited 1: boom")
        return _info(part, [_net_row("first push", 9.0, 10.0, (71, 39), 1.0)])

    monkeypatch.setattr(world, "run_part", run_part)
    monkeypatch.setattr(world, "ensure_restic", lambda: "restic")
    monkeypatch.setattr(world, "compile_roam", lambda: None)
    monkeypatch.setattr(world, "disk_needed", lambda _args: 0)  # nothing is generated here
    (tmp_path / "git.json").write_text(json.dumps(_info("git", [])))  # an older run's
    out = tmp_path / "benchmarks.md"
    code = world.main(["--parts", "s3,git", "--workdir", str(tmp_path), "--out", str(out)])
    assert code == 1
    text = out.read_text()
    assert "### S3: SeaweedFS" in text and "### git" not in text
    assert not (tmp_path / "git.json").exists()
