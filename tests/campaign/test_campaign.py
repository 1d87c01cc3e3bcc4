"""The randomized multi-device campaign on every backend (seeded; the seed is printed on failure).

`ROAM_CAMPAIGN_SEED` replays a run, `ROAM_CAMPAIGN_STEPS` makes it longer (a soak run).
"""

from __future__ import annotations

import os
import random
import secrets
import time

import pytest
from campaign.checks import play
from campaign.driver import Campaign
from campaign.harness import KINDS, Runner, fast_dir, stores

pytest_plugins = ("support.s3_servers",)

STEPS = int(os.environ.get("ROAM_CAMPAIGN_STEPS") or 300)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", KINDS)
def test_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    seed = int(os.environ.get("ROAM_CAMPAIGN_SEED") or secrets.randbits(32))
    started = time.monotonic()
    with fast_dir(f"roam-campaign-{kind}-") as root, stores(kind, root, request) as store:
        campaign = Campaign(store, root, random.Random(seed), Runner())
        try:
            play(campaign, STEPS)
        except AssertionError as failure:
            tail = "\n".join(campaign.log[-25:])
            raise AssertionError(
                f"campaign on {kind} failed (seed {seed}, {STEPS} steps): {failure}\n"
                f"replay: ROAM_CAMPAIGN_SEED={seed} ROAM_CAMPAIGN_STEPS={STEPS} "
                f"pytest tests/campaign/test_campaign.py -k {kind}\nlast steps:\n{tail}"
            ) from None
    print(f"campaign {kind}: seed {seed}, {STEPS} steps, generation {campaign.fleet.head}, "
          f"{time.monotonic() - started:.1f}s")
