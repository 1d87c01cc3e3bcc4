"""`roam upgrade`: move a version 1 store to format version 2 (trees in tree packs).

Only HEAD changes: it is published again at the same generation and snapshot, in format 2.
From then on every push writes its trees into tree packs; the trees already stored stay
where they are and are read as version 1 trees. A device running a roam that does not know
format 2 stops at HEAD with a clear error, so this is done once every device is updated
(docs/format.md, "Version 2").
"""

from __future__ import annotations

from dataclasses import dataclass

from roam_core.engine import remote as remote_module
from roam_core.engine.session import Session
from roam_core.errors import ConflictError, RefConflict
from roam_core.store.objects import STORE_FORMAT


@dataclass
class UpgradeResult:
    """The store's format before and after, and the generation HEAD names."""

    before: int
    after: int
    generation: int

    def as_json(self) -> dict[str, int | bool]:
        return {"before": self.before, "after": self.after, "generation": self.generation,
                "upgraded": self.after != self.before}


def upgrade(session: Session) -> UpgradeResult:
    """Publish HEAD again in the current format; nothing to do when it already is."""
    state = session.require_state()
    view = remote_module.require_remote(session, state)  # authentic, this fleet, no rollback
    head = view.head
    if head.format >= STORE_FORMAT:
        return UpgradeResult(head.format, head.format, head.generation)
    repo = session.repo
    repo.format = STORE_FORMAT
    try:
        repo.write_head(head, head.version)
    except RefConflict:
        raise ConflictError("the remote head moved during the upgrade; run roam upgrade "
                            "again") from None
    repo.backend.flush()
    return UpgradeResult(head.format, STORE_FORMAT, head.generation)
