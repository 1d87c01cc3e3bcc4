"""N real processes push at once, round after round, on every remote backend.

Each process is its own device with its own change, released together from a barrier
after its imports. Per round exactly one new generation appears, exactly one process exits
0 and every other one exits 2 (the remote moved ahead), the winner's change is what the new
generation holds, and `roam check --read-data` passes. Losers then pull and race again.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, fast_dir, stores
from campaign.storeview import open_repository

pytest_plugins = ("support.s3_servers",)

DEVICES = 4
ROUNDS = 3
#: Imports first, then say so (the ready file) and wait for the go file: the pushes start
#: within a millisecond or so of each other, however long a loaded machine takes to import.
BARRIER = """
import os, sys, time
from roam_core.cli.main import main
import roam_core.engine.push, roam_core.engine.session
open(os.environ["RACE_READY"], "w").close()
go = os.environ["RACE_GO"]
while not os.path.exists(go):
    time.sleep(0.0005)
sys.exit(main(sys.argv[1:]))
"""


def race(homes: list[Home], go: Path, *args: str) -> list[subprocess.CompletedProcess[str]]:
    """Start `roam ARGS` on every home, release them together, wait for all."""
    go.unlink(missing_ok=True)
    ready = [go.with_name(f"{go.name}-ready-{n}") for n in range(len(homes))]
    for path in ready:
        path.unlink(missing_ok=True)
    procs = [subprocess.Popen([sys.executable, "-c", BARRIER, "--home", str(home.root), *args],
                              env=home.env({"RACE_GO": str(go), "RACE_READY": str(path)}),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for home, path in zip(homes, ready, strict=True)]
    waited = time.monotonic() + 120
    while not all(path.exists() for path in ready):  # every process imported roam, waits
        assert time.monotonic() < waited, "a racing process never finished its imports"
        assert all(proc.poll() is None for proc in procs), "a racing process ended early"
        time.sleep(0.01)
    go.touch()
    results = []
    for proc, home in zip(procs, homes, strict=True):
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(home.name, proc.returncode, out, err))
    return results


@pytest.fixture(params=["local", "s3", "git"])
def fleet(request: pytest.FixtureRequest) -> Iterator[tuple[list[Home], Path]]:
    with fast_dir("roam-race-") as root, stores(request.param, root, request) as store:
        runner = Runner()
        homes = [Home(root / f"d{i}", f"d{i}", store, runner) for i in range(DEVICES)]
        yield homes, root / "go"


def _head(home: Home) -> int:
    report = home.roam("check", "--read-data", "--json")
    assert report.code == 0, report.out + report.err
    return int(report.json()["head_generation"])


def test_concurrent_pushes_have_exactly_one_winner(fleet: tuple[list[Home], Path]) -> None:
    homes, go = fleet
    homes[0].write("SOUL.md", "founded\n")
    assert homes[0].roam("init", "--create-remote").code == 0
    assert homes[0].roam("push").code == 0
    for home in homes[1:]:
        assert home.roam("init").code == 0
    generation = _head(homes[0])
    winners: list[str] = []
    for number in range(1, ROUNDS + 1):
        for home in homes:
            pulled = home.roam("pull", "--apply")
            assert pulled.code == 0, pulled.err
            home.write(f"skills/{home.name}/SKILL.md", f"{home.name} round {number}\n")
        results = race(homes, go, "push", "--json")
        codes = sorted(result.returncode for result in results)
        assert codes == [0] + [2] * (DEVICES - 1), [(r.args, r.returncode, r.stderr)
                                                    for r in results]
        for result in results:
            if result.returncode == 2:
                assert "moved ahead" in result.stderr and "Traceback" not in result.stderr
        winner = next(r for r in results if r.returncode == 0)
        winners.append(str(winner.args))
        generation += 1
        assert _head(homes[0]) == generation, "exactly one new generation per round"
        checker = homes[0]
        assert checker.roam("pull", "--apply").code == 0
        assert (checker.root / f"skills/{winner.args}/SKILL.md").read_text() == \
            f"{winner.args} round {number}\n"
    assert len(winners) == ROUNDS
    if homes[0].store.kind != "git":  # git publishes a loser's objects never, with HEAD or not
        with open_repository(homes[0].store, go.parent / "view") as repo:
            snapshots = len(list(repo.backend.list("snapshots/")))
        assert snapshots > generation + 1, "no push ever lost the compare-and-swap itself"
