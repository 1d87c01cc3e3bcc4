"""The shape campaign (issue 18) on the local backend and git (seeded; replay with the seed).

`ROAM_SHAPE_SEED` replays a run, `ROAM_SHAPE_STEPS` makes it longer (a soak run).
"""

from __future__ import annotations

import os
import random
import secrets
import time

import pytest
from campaign.harness import Runner, fast_dir, stores
from campaign.shapes import ShapeCampaign

STEPS = int(os.environ.get("ROAM_SHAPE_STEPS") or 300)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["local", "git"])
def test_shape_campaign(kind: str, request: pytest.FixtureRequest) -> None:
    if os.geteuid() != 0:
        pytest.skip("the unreadable-folder steps need root (chmod back, setpriv)")
    seed = int(os.environ.get("ROAM_SHAPE_SEED") or secrets.randbits(32))
    started = time.monotonic()
    with fast_dir(f"roam-shapes-{kind}-") as root, stores(kind, root, request) as store:
        campaign = ShapeCampaign(store, root, random.Random(seed), Runner())
        try:
            campaign.play(STEPS)
        except Exception as failure:  # the harness's own errors need the seed too
            tail = "\n".join(campaign.log[-25:])
            raise AssertionError(
                f"shape campaign on {kind} failed (seed {seed}, {STEPS} steps): {failure}\n"
                f"replay: ROAM_SHAPE_SEED={seed} ROAM_SHAPE_STEPS={STEPS} "
                f"pytest tests/campaign/test_shape_campaign.py -k {kind}\n"
                f"last steps:\n{tail}") from None
        finally:
            for dev in campaign.devices:
                dev.heal()  # chmod back, so the scratch folder can be removed
    print(f"shape campaign {kind}: seed {seed}, {STEPS} steps, "
          f"{time.monotonic() - started:.1f}s")
