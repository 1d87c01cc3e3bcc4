"""Eight processes (not threads) racing `swap_ref` with the same lease: exactly one winner."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from roam_backend_git.backend import GitBackend
from roam_backend_git.config import parse_settings
from roam_core.errors import RefConflict

PROCESSES = 8
ROUNDS = 3


def _racer(url: str, home: str, index: int, barrier: Any, queue: Any) -> None:
    backend = GitBackend(parse_settings({"git_remote": url}, Path(home)),
                         Path(home) / "git-mirror")
    for round_no in range(ROUNDS):
        barrier.wait(60)
        found = backend.read_ref("HEAD")
        assert found is not None
        backend.put_new(f"data/r{round_no}-p{index}", f"{round_no}-{index}".encode())
        barrier.wait(60)  # everyone holds the same version now
        try:
            backend.swap_ref("HEAD", f"round-{round_no}-proc-{index}".encode(), found[1])
            queue.put((round_no, index, "won"))
        except RefConflict:
            queue.put((round_no, index, "lost"))
        except BaseException as error:
            queue.put((round_no, index, f"error: {type(error).__name__}: {error}"))
        barrier.wait(60)


def test_eight_processes_racing_a_push_have_exactly_one_winner(
        remote_url: str, open_backend: Any, tmp_path: Path) -> None:
    setup = open_backend(remote_url)
    setup.swap_ref("HEAD", b"base", None)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    queue = context.Queue()
    procs = [context.Process(target=_racer, args=(remote_url, str(tmp_path / f"racer-{i}"),
                                                   i, barrier, queue))
             for i in range(PROCESSES)]
    for proc in procs:
        proc.start()
    try:
        results = [queue.get(timeout=120) for _ in range(PROCESSES * ROUNDS)]
    finally:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    reader = open_backend(remote_url)
    published = set(reader.list("data/"))
    wins: dict[int, list[int]] = {}
    for round_no in range(ROUNDS):
        outcomes = {index: outcome for r, index, outcome in results if r == round_no}
        assert sorted(outcomes.values()).count("won") == 1, outcomes
        assert set(outcomes.values()) <= {"won", "lost"}, outcomes
        winner = next(index for index, outcome in outcomes.items() if outcome == "won")
        wins.setdefault(winner, []).append(round_no)
    # A loser's staged objects stay staged and go out with its next winning commit, if any.
    for round_no in range(ROUNDS):
        for index in range(PROCESSES):
            expected = any(won >= round_no for won in wins.get(index, []))
            assert (f"data/r{round_no}-p{index}" in published) == expected, (round_no, index)
    head = reader.read_ref("HEAD")
    assert head is not None and head[0].startswith(f"round-{ROUNDS - 1}-proc-".encode())
