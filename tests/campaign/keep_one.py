"""The campaign with `backup_keep: 1`: pruning must never take a never-pushed version (P1).

Every install prunes all backup folders but the newest, except those holding a version the
store never received. At the end, each never-pushed version an install replaced outright
(`--overwrite-conflicts`, `restore --apply`) is still in that device's backups, unless it
was pushed since.
"""

from __future__ import annotations

from campaign.checks import play
from campaign.driver import Campaign


class KeepOneCampaign(Campaign):
    BACKUP_KEEP = 1


def play_keep_one(run: KeepOneCampaign, steps: int) -> None:
    """The ordinary campaign and its checks, then P1 for versions only backups hold."""
    play(run, steps)
    for dev, rel, data in run.only_in_backups:
        if data in run.fleet.pushed.get(rel, set()):
            continue
        assert data in run.backups(dev), (
            f"P1: a never-pushed version of {rel} on {dev.model.name} was pruned from "
            "roam/backups/ (backup_keep: 1)")
