"""The randomized multi-device campaign on every backend (seeded; the seed is printed on failure).

`ROAM_CAMPAIGN_SEED` replays a run, `ROAM_CAMPAIGN_STEPS` makes it longer (a soak run).
"""

from __future__ import annotations

import os
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

import pytest
from campaign.checks import play
from campaign.driver import Campaign
from campaign.harness import KINDS, Runner, fast_dir, stores

pytest_plugins = ("support.s3_servers",)

STEPS = int(os.environ.get("ROAM_CAMPAIGN_STEPS") or 300)


def _played(kind: str, request: pytest.FixtureRequest, label: str, make: Callable[..., Any],
            player: Callable[[Any, int], None], steps: int, knob: str) -> tuple[Any, int]:
    """Play one campaign of `make`'s class on a fresh store; the failure names its replay."""
    seed = int(os.environ.get("ROAM_CAMPAIGN_SEED") or secrets.randbits(32))
    with fast_dir(f"roam-{label}-{kind}-") as root, stores(kind, root, request) as store:
        campaign = make(store, root, random.Random(seed), Runner())
        try:
            player(campaign, steps)
        except AssertionError as failure:
            tail = "\n".join(campaign.log[-25:])
            raise AssertionError(
                f"{label} on {kind} failed (seed {seed}, {steps} steps): {failure}\n"
                f"replay: ROAM_CAMPAIGN_SEED={seed} {knob}={steps} "
                f"pytest tests/campaign/test_campaign.py -k {kind}\nlast steps:\n{tail}"
            ) from None
    return campaign, seed


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", KINDS)
def test_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    started = time.monotonic()
    campaign, seed = _played(kind, request, "campaign", Campaign, play, STEPS,
                             "ROAM_CAMPAIGN_STEPS")
    print(f"campaign {kind}: seed {seed}, {STEPS} steps, generation {campaign.fleet.head}, "
          f"{time.monotonic() - started:.1f}s")


HOSTILE_STEPS = int(os.environ.get("ROAM_HOSTILE_STEPS") or 96)
#: S3 (moto) costs a request per object: a shorter run, still three hostile events
HOSTILE_S3_STEPS = int(os.environ.get("ROAM_HOSTILE_STEPS") or 36)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["memory", "local", "git", "s3"])
def test_hostile_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    """The store loses packs and replays old HEADs between steps (see campaign.hostile_run)."""
    from campaign.hostile_run import HostileCampaign, play_hostile

    steps = HOSTILE_S3_STEPS if kind == "s3" else HOSTILE_STEPS
    campaign, seed = _played(kind, request, "hostile", HostileCampaign, play_hostile,
                             steps, "ROAM_HOSTILE_STEPS")
    print(f"hostile campaign {kind}: seed {seed}, {steps} steps, generation "
          f"{campaign.fleet.head}, {campaign.events}, {len(campaign.lost)} version(s) lost")


KEEP_ONE_STEPS = int(os.environ.get("ROAM_KEEP_ONE_STEPS") or 120)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_campaign_keeping_one_backup(request: pytest.FixtureRequest) -> None:
    """`backup_keep: 1`: P1 holds, a never-pushed replaced version outlives pruning."""
    from campaign.keep_one import KeepOneCampaign, play_keep_one

    campaign, seed = _played("local", request, "keep-one", KeepOneCampaign, play_keep_one,
                             KEEP_ONE_STEPS, "ROAM_KEEP_ONE_STEPS")
    assert campaign.only_in_backups, "the run replaced no never-pushed version: it proved nothing"
    print(f"keep-one campaign: seed {seed}, {KEEP_ONE_STEPS} steps, "
          f"{len(campaign.only_in_backups)} never-pushed version(s) kept in backups")


ROTATING_STEPS = int(os.environ.get("ROAM_ROTATING_STEPS") or 120)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["memory", "local", "git", "s3"])
def test_rotating_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    """`roam key rotate` steps between the others."""
    from campaign.rotating import RotatingCampaign, play_rotating

    steps = min(ROTATING_STEPS, GIT_STEPS) if kind == "git" else ROTATING_STEPS
    campaign, seed = _played(kind, request, "rotating", RotatingCampaign, play_rotating,
                             steps, "ROAM_ROTATING_STEPS")
    print(f"rotating campaign {kind}: seed {seed}, {steps} steps, generation "
          f"{campaign.fleet.head}, {len(campaign.old_keys)} rotation(s)")


PRUNING_STEPS = int(os.environ.get("ROAM_PRUNING_STEPS") or 200)
#: git runs a process's worth of plumbing per step: fewer steps, the same kinds of steps
GIT_STEPS = int(os.environ.get("ROAM_GIT_CAMPAIGN_STEPS") or 80)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["memory", "local", "git", "s3"])
def test_pruning_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    """`roam forget` (random policy) and `roam prune --apply` steps between the others."""
    from campaign.pruning import PruningCampaign, play_pruning

    started = time.monotonic()
    steps = min(PRUNING_STEPS, GIT_STEPS) if kind == "git" else PRUNING_STEPS
    campaign, seed = _played(kind, request, "pruning", PruningCampaign, play_pruning,
                             steps, "ROAM_PRUNING_STEPS")
    assert campaign.forgotten and campaign.prunes, ("the run forgot or pruned nothing",
                                                    campaign.log[-30:])
    print(f"pruning campaign {kind}: seed {seed}, {steps} steps, generation "
          f"{campaign.fleet.head}, {campaign.forgotten} forgotten, {campaign.prunes} prune(s), "
          f"{time.monotonic() - started:.1f}s")
