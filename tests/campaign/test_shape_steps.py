"""The shape campaign's own steps leave a home in a shape they can take the next step from.

Found while replaying seeds (issue 18): a `deep` step on a home where a pull had put a file
inside the place the deep folder goes (another device turned a folder of its own deep tree
into a file, which made it shallow enough to publish) died with NotADirectoryError in the
harness, reported as an unexplained campaign failure.
"""

from __future__ import annotations

import random
from pathlib import Path

from campaign.harness import Runner, stores
from campaign.shapes import DEEP, SKILLS, ShapeCampaign


def test_a_deep_step_clears_a_file_on_its_way(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        campaign = ShapeCampaign(store, tmp_path, random.Random(1), Runner())
        dev = campaign.devices[0]
        for skill in SKILLS:  # what a pull brings: a file where the deep folder passes
            (dev.root / f"skills/{skill}/deep").mkdir(parents=True)
            (dev.root / f"skills/{skill}/deep/d").write_text("published by the other device\n")
        made = campaign.deep(dev)
        deepest = dev.root / made / "/".join(["d"] * DEEP) / "x.md"
        assert deepest.read_text() == "deep\n"
