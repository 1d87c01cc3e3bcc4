"""Issue 23: pushes from several processes while prune runs, round after round.

Three devices push (pull first when behind) in their own processes while this process
forgets and prunes the same store. Contents are drawn from a small pool, so pushes keep
bringing back content that only forgotten generations held (marked packs and trees). Each
round's prunes run one after another while the pushes do, with a grace period of a few
seconds and every push's deadline below it (as the defaults are), so marks come due while
pushes are in flight: the pushers stop only once a sweep of their round has deleted (an
event, not a count, so a fast or a slow machine races the same way). After every round
`roam check --read-data` is clean and every kept generation reads back whole. Every other
push packs a slowly changing file beside the fresh one, so once forgotten its pack is half
garbage: prunes repack such packs while pushes run (the pushers also wait for a repack). On
git (a real bare remote over file://) a deletion is a parentless commit pushed under the
branch's lease while the pushers' commits race it.
"""

from __future__ import annotations

import contextlib
import random
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, settings_yaml, stores
from helpers import every_version, session_of
from race_log import RaceLog

from roam_core.engine.forget import forget
from roam_core.engine.prune import prune
from roam_core.engine.retention import Policy

pytest_plugins = ("support.s3_servers",)

#: The content pool's seed (the interleaving is the machine's: a failure prints it).
SEED = 23
ROUNDS = {"local": 2, "s3": 2, "git": 1}  # git's processes are slower: one round, same race
DEVICES = 3
#: Each push must finish within this (its deadline), well inside the grace period below.
PUSH_SECONDS = 6
GRACE_SECONDS = 8
#: A pusher gives up waiting for its round's first deletion after this long (the test fails).
PUSH_LOOP_CAP = 150
#: The settling pulls' and the check's budget.
SETTLE_SECONDS = 300


def _pushes(home: Home, seconds: int, stop: Path, log: RaceLog) -> subprocess.Popen[str]:
    """A shell loop in its own process: fresh content, pull, push, until `stop` exists.

    It runs at least `seconds` (past the grace period) and then until the test says a sweep
    deleted (the file `stop`), so marks come due and are swept while pushes are in flight on
    any machine; each pass leaves a generation that the next forget turns into garbage.
    Each pass is logged (`log`), for a failure's diagnosis.
    """
    fresh = home.root / "memories" / f"{home.name}-loop.md"
    slow = home.root / "memories" / f"{home.name}-slow.md"
    # every other pass also changes `slow`: that pass's pack holds it beside `fresh`, and
    # once the next pass replaces `fresh` the pack is half garbage (a repack candidate)
    script = (f"n=0; while :; do n=$((n+1));"
              f" head -c 20000 /dev/urandom > {shlex.quote(str(fresh))};"
              f" [ $((n % 2)) = 1 ] && head -c 20000 /dev/urandom > {shlex.quote(str(slow))};"
              + log.pass_script(home, _quote(home.argv("pull", "--apply")),
                                _quote(home.argv("push"))) +
              f" [ $SECONDS -ge {seconds} ] && [ -e {shlex.quote(str(stop))} ] && break;"
              f" [ $SECONDS -ge {PUSH_LOOP_CAP} ] && break; done; exit 0")
    return subprocess.Popen(["bash", "-c", script], env=home.env(), text=True)


@contextlib.contextmanager
def _unhurried(homes: list[Home]) -> Iterator[None]:
    """The homes without the racing pushes' short budget for the block."""
    for home in homes:
        (home.root / "config.yaml").write_text(settings_yaml(home.name, {
            **home.settings, "operation_timeout_seconds": SETTLE_SECONDS}))
    try:
        yield
    finally:
        for home in homes:
            (home.root / "config.yaml").write_text(settings_yaml(home.name, home.settings))


def _quote(argv: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in argv)


@pytest.mark.parametrize("kind", ["local", "s3", "git"])
def test_pushes_while_prune_runs_lose_nothing_kept(kind: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    rng = random.Random(SEED)
    pool = [rng.randbytes(20_000) for _ in range(3)]
    log = RaceLog(tmp_path / "race-log", SEED)
    with stores(kind, tmp_path, request) as store:
        runner = Runner()
        homes = [Home(tmp_path / f"dev{n}", f"dev{n}", store, runner,
                      operation_timeout_seconds=PUSH_SECONDS) for n in range(DEVICES)]
        try:
            _race(homes, rng, pool, kind, tmp_path, log)
        except BaseException:
            print(log.report(homes))  # shown with the failure: the CI log alone diagnoses it
            raise


def _race(homes: list[Home], rng: random.Random, pool: list[bytes], kind: str,
          tmp_path: Path, log: RaceLog) -> None:
    assert homes[0].roam("init", "--create-remote").code == 0
    for home in homes[1:]:
        assert home.roam("init").code == 0
    for home in homes:
        assert home.roam("pull", "--apply").code == 0
        home.write(f"memories/{home.name}.md", rng.choice(pool))
        assert home.roam("push").code in (0, 2)
    repacked = sweeps = 0
    for round_number in range(1, ROUNDS[kind] + 1):
        for home in homes:
            home.write(f"memories/{home.name}.md", rng.choice(pool))
            home.write("memories/shared.md", rng.choice(pool))
        stop = tmp_path / f"deleted-in-round-{round_number}"
        pushers = [_pushes(home, GRACE_SECONDS + PUSH_SECONDS, stop, log) for home in homes]
        deleted = 0
        try:
            # sweep after sweep while the pushes run (a session each: one operation's
            # budget each); a push's budget (PUSH_SECONDS, enforced on every backend
            # call) is below the grace period, as the defaults are (docs/decisions.md).
            # The sweeps run here, on the first device's state and without its home lock,
            # beside that device's own pushes: an unlocked reader's case too (its floor
            # rises meanwhile; tests/engine/test_floor_race.py forces that interleaving)
            while any(pusher.poll() is None for pusher in pushers):
                sweeps += 1
                plan = swept = None
                try:
                    with session_of(homes[0]) as session:
                        plan = forget(session, Policy(last=1), apply=True)
                        swept = prune(session, apply=True, grace_minutes=GRACE_SECONDS / 60)
                except BaseException as error:
                    log.sweep(sweeps, plan, swept, error)
                    raise
                log.sweep(sweeps, plan, swept)
                deleted += sum(swept.deleted.values())
                repacked += swept.repacked
                if deleted and repacked:
                    stop.touch()
        finally:
            for pusher in pushers:
                pusher.wait(timeout=300)
        with _unhurried(homes):  # the checks are no race: a loaded machine may be slow
            for home in homes:  # everyone settles, so every change is published
                pulled = home.roam("pull", "--apply")
                assert pulled.code in (0, 2), \
                    f"round {round_number}: {home.name}'s pull: {pulled.out}{pulled.err}"
            check = homes[0].roam("check", "--read-data")
            assert check.code == 0, f"round {round_number}: {check.out}{check.err}"
            assert len(every_version(homes[0])) >= 1
        assert deleted > 0, f"round {round_number}: no sweep deleted while pushes ran"
    assert repacked > 0, "no prune repacked while pushes ran"
