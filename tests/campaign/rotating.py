"""The campaign with `roam key rotate` steps between pushes and pulls (issue 23).

A rotation re-seals the whole store under a new key; from then on every device runs with the
new key (a fleet told the new key at once), so each device's first push or pull afterwards
re-points its merge base. The ordinary properties must all still hold (P1 every pushed
version back byte-exact, P2 convergence, P3 no canary, `check --read-data` clean), and at
the end every key the fleet ever rotated away from opens nothing the store holds but its
own tombstone.
"""

from __future__ import annotations

import os
from collections import Counter

from campaign.checks import close_repository, final_checks, repository
from campaign.driver import Campaign
from campaign.harness import new_key

from roam_core import crypto
from support.keyaudit import audit


class RotatingCampaign(Campaign):
    """Adds a `rotate` step; remembers each old key for the final audit."""

    def steps(self) -> list[tuple[int, str]]:
        return [*super().steps(), (2, "rotate")]

    def step_rotate(self, index: int) -> None:
        new = new_key()
        os.environ["ROAM_NEW_ARCHIVE_KEY"] = new
        try:
            ran = self.command(index, "key", "rotate", "--json")
        finally:
            del os.environ["ROAM_NEW_ARCHIVE_KEY"]
        result = self.expect(ran, 0, "key rotate").json()
        assert result["complete"] and result["generation"] == self.fleet.head, result
        old_keys = getattr(self, "old_keys", [])
        self.old_keys = [*old_keys, self.store.key]
        self.store.key = new
        # the auditor's view was opened with the old key
        close_repository(self)
        self._repo = None


def play_rotating(run: RotatingCampaign, steps: int) -> None:
    """The ordinary campaign and its checks, then: old keys open only their tombstones."""
    try:
        run.setup()
        run.run(steps)
        if not getattr(run, "old_keys", None):
            run.step_rotate(0)  # every run rotates at least once
        final_checks(run)
        repo = repository(run)
        for old in run.old_keys:
            opened = audit(repo.backend, crypto.Keys.derive(crypto.parse_key(old)))
            assert opened == Counter({"rotated": 1}), (old[:6], opened)
    finally:
        close_repository(run)
