"""What the prune tests share: a home's store keys, and every kept generation read back."""

from __future__ import annotations

from campaign.harness import Home

from roam_core.engine.history import generations
from support.sessions import session_of

__all__ = ["every_version", "session_of", "store_keys"]


def store_keys(home: Home, prefix: str = "") -> set[str]:
    with session_of(home) as session:
        return set(session.backend.list(prefix))


def every_version(home: Home) -> dict[int, dict[str, bytes]]:
    """Each kept generation's every file, read back from the store (and checked)."""
    found: dict[int, dict[str, bytes]] = {}
    with session_of(home) as session:
        for gen in generations(session):
            manifest = session.repo.load_manifest(gen.snapshot.root)
            found[gen.number] = {path: session.repo.read_content(entry)
                                 for path, entry in manifest.items()}
    return found
