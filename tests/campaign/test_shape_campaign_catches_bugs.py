"""The shape campaign fails on a real bug: a push that cannot see a path deletes it.

The planted bug: push forgets what the walk skipped (symlinks, unreadable folders), so
what the last generation held there is published as removed — issue 18's fleet-wide
deletion. Planted in this process only (monkeypatched), never in the source tree.
"""

from __future__ import annotations

import os
import random

import pytest
from campaign.harness import Runner, fast_dir, stores
from campaign.shapes import ShapeCampaign

from roam_core.engine import push as push_module

SEEDS = (1, 2, 3)
STEPS = 120


@pytest.mark.slow
def test_publishing_unseen_paths_as_removed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("the unreadable-folder steps need root (chmod back, setpriv)")
    monkeypatch.setattr(push_module, "hidden_by", lambda skipped: lambda rel: False)
    failure = None
    for seed in SEEDS:
        with fast_dir("roam-shape-mutant-") as root, stores("local", root) as store:
            campaign = ShapeCampaign(store, root, random.Random(seed), Runner())
            try:
                campaign.play(STEPS)
            except AssertionError as error:
                failure = f"seed {seed}: {error}"
            finally:
                for dev in campaign.devices:
                    dev.heal()
        if failure is not None:
            break
    assert failure is not None, "the shape campaign missed a push deleting what it cannot see"
    assert "push removed or changed unseen" in failure, failure
    print(failure.splitlines()[0])
