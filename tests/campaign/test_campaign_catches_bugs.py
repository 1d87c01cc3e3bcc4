"""The campaign is only worth its time if it fails on real bugs: two are planted and caught.

1. The journal skips the backup copy of one replaced file (the first SKILL.md of an
   install): the campaign must report P1, a local edit replaced without a backup.
2. Push carries forward the wrong entry for a path the device cannot see (its own stale
   base instead of the remote's current entry when forced): P1, a generation that holds
   other versions than were pushed.

Each bug is planted in this process only (a wrapper or a patched copy of the function),
never in the source tree. A few seeds are tried; one catching the bug is enough.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable
from typing import Any

import pytest
from campaign.checks import play
from campaign.driver import Campaign
from campaign.harness import Runner, fast_dir, stores

from roam_core.engine import journal
from roam_core.engine import push as push_module

SEEDS = (3, 2, 5, 1)
STEPS = 300


def _campaign_failure() -> str | None:
    """Run the campaign on the memory backend seed by seed; the first failure's message."""
    for seed in SEEDS:
        with fast_dir("roam-mutant-") as root, stores("memory", root) as store:
            campaign = Campaign(store, root, random.Random(seed), Runner())
            try:
                play(campaign, STEPS)
            except AssertionError as failure:
                return f"seed {seed}: {failure}"
    return None


def _skip_one_backup(original: Callable[..., Any]) -> Callable[..., Any]:
    def stage(self: Any) -> Any:
        for op in self.ops:
            if op.backup is not None and op.rel.endswith("SKILL.md"):
                op.backup = None  # the planted bug: this file is replaced without a copy
                break
        return original(self)
    return stage


@pytest.mark.slow
def test_skipping_one_backup_copy_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal.Install, "_stage", _skip_one_backup(journal.Install._stage))
    failure = _campaign_failure()
    assert failure is not None, "the campaign missed a journal that skips a backup copy"
    assert "P1" in failure and "in no backup folder" in failure, failure


CARRY = "        manifest[rel] = entry\n"
WRONG = "        manifest[rel] = base.get(rel, entry)\n"


@pytest.mark.slow
def test_carrying_forward_the_wrong_entry_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    source = inspect.getsource(push_module)
    assert source.count(CARRY) == 1, "push.py changed: update the planted bug's anchor line"
    namespace = dict(vars(push_module))
    exec(compile(source.replace(CARRY, WRONG), push_module.__file__, "exec"), namespace)
    monkeypatch.setattr(push_module, "push", namespace["push"])
    failure = _campaign_failure()
    assert failure is not None, "the campaign missed a push that carries the wrong entry"
    assert "P1" in failure and "holds other versions than were pushed" in failure, failure
