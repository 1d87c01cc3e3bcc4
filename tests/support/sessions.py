"""A session on a test home's store, opened in this process with the store's secrets."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from campaign.harness import Home

from roam_core.engine.session import Session
from roam_core.home import resolve_home


@contextlib.contextmanager
def session_of(home: Home) -> Iterator[Session]:
    """The home's session with its store's secrets in the environment, restored after."""
    saved = dict(os.environ)
    os.environ.update(home.store.env())
    session = Session.open(resolve_home(str(home.root)), "status")
    try:
        yield session
    finally:
        session.close()
        os.environ.clear()
        os.environ.update(saved)
