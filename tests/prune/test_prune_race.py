"""Issue 23: pushes from several processes while prune runs, round after round.

Three devices push (pull first when behind) in their own processes while this process
forgets and prunes the same store. Contents are drawn from a small pool, so pushes keep
bringing back content that only forgotten generations held (marked packs and trees). Each
round's prunes run one after another while the pushes do, with a grace period of a few
seconds and every push's deadline below it (as the defaults are), so marks come due while
pushes are in flight. After every round `roam check --read-data` is clean and
every kept generation reads back whole.
"""

from __future__ import annotations

import random
import shlex
import subprocess
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, stores
from helpers import every_version, session_of

from roam_core.engine.forget import forget
from roam_core.engine.prune import prune
from roam_core.engine.retention import Policy

pytest_plugins = ("support.s3_servers",)

ROUNDS = 2
DEVICES = 3
#: Each push must finish within this (its deadline), well inside the grace period below.
PUSH_SECONDS = 6
GRACE_SECONDS = 8


def _pushes(home: Home, seconds: int) -> subprocess.Popen[str]:
    """A shell loop in its own process for at least `seconds`: fresh content, pull, push.

    The loop runs by time, not by count, so it outlasts the grace period on a fast machine
    too: marks made by the first sweeps come due while pushes are still in flight, and each
    pass leaves a generation that the next forget turns into garbage.
    """
    fresh = home.root / "memories" / f"{home.name}-loop.md"
    script = (f"while :; do head -c 20000 /dev/urandom > {shlex.quote(str(fresh))};"
              f" {_quote(home.argv('pull', '--apply'))} >/dev/null 2>&1;"
              f" {_quote(home.argv('push'))} >/dev/null 2>&1;"
              f" [ $SECONDS -ge {seconds} ] && break; done; exit 0")
    return subprocess.Popen(["bash", "-c", script], env=home.env(), text=True)


def _quote(argv: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in argv)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_pushes_while_prune_runs_lose_nothing_kept(kind: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    rng = random.Random(23)
    pool = [rng.randbytes(20_000) for _ in range(3)]
    with stores(kind, tmp_path, request) as store:
        runner = Runner()
        homes = [Home(tmp_path / f"dev{n}", f"dev{n}", store, runner,
                      operation_timeout_seconds=PUSH_SECONDS) for n in range(DEVICES)]
        assert homes[0].roam("init", "--create-remote").code == 0
        for home in homes[1:]:
            assert home.roam("init").code == 0
        for home in homes:
            assert home.roam("pull", "--apply").code == 0
            home.write(f"memories/{home.name}.md", rng.choice(pool))
            assert home.roam("push").code in (0, 2)
        deleted = 0
        for round_number in range(1, ROUNDS + 1):
            for home in homes:
                home.write(f"memories/{home.name}.md", rng.choice(pool))
                home.write("memories/shared.md", rng.choice(pool))
            pushers = [_pushes(home, GRACE_SECONDS + PUSH_SECONDS) for home in homes]
            try:
                with session_of(homes[0]) as session:
                    # sweep after sweep while the pushes run; a push's budget (PUSH_SECONDS,
                    # enforced on every backend call) is below the grace period, as the
                    # defaults are (docs/decisions.md)
                    while any(pusher.poll() is None for pusher in pushers):
                        forget(session, Policy(last=1), apply=True)
                        swept = prune(session, apply=True, grace_minutes=GRACE_SECONDS / 60)
                        deleted += sum(swept.deleted.values())
            finally:
                for pusher in pushers:
                    pusher.wait(timeout=300)
            for home in homes:  # everyone settles, so every device's changes are published
                assert home.roam("pull", "--apply").code in (0, 2)
            check = homes[0].roam("check", "--read-data")
            assert check.code == 0, f"round {round_number}: {check.out}{check.err}"
            assert len(every_version(homes[0])) >= 1
        assert deleted > 0  # the sweeps did delete while pushes ran
