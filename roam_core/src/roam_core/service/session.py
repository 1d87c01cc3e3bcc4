"""Opening a home for one operation: resolve it, lock it, recover a crashed install first."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from roam_core import deadline
from roam_core.engine.lock import HomeLock
from roam_core.engine.session import Session
from roam_core.errors import LockedError
from roam_core.home import resolve_home

#: Where a one-line notice goes (the CLI prints it on stderr, Hermes collects it).
Notify = Callable[[str], None]


def recover(session: Session, notify: Notify) -> None:
    """Roll back an install a crash left unfinished (needs the lock); `notify` says so."""
    if not (session.state_dir / "journal.json").exists():
        return  # nothing to recover: the journal module is not even imported
    from roam_core.engine.journal import recover_home

    message = recover_home(session)
    if message:
        notify(message)


@contextlib.contextmanager
def operation(home: str | Path | None, name: str, notify: Notify, *,
              lock: bool = True) -> Iterator[Session]:
    """Open `home` for `name`; hold the lock for writers; recover a crashed install first."""
    session = Session.open(resolve_home(home), name)
    home_lock = HomeLock(session.state_dir)
    held = False
    # A reader never creates anything in the home: without roam/ there is no lock to take
    # and no crashed install to recover, and the verb itself says "run roam init".
    skip = not lock and not (session.state_dir / "lock").exists()
    try:
        with deadline.running(session.deadline):
            try:
                if not skip:
                    home_lock.acquire()
                    held = True
            except LockedError:
                if lock:
                    raise
            if held:
                recover(session, notify)
                if not lock:
                    home_lock.release()
                    held = False
            yield session
    finally:
        if held:
            home_lock.release()
        session.close()
