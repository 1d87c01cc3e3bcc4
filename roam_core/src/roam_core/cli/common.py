"""What every command that touches a home shares: resolve it, lock it, recover it."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from roam_core.cli.output import note
from roam_core.engine.session import Session
from roam_core.service import session as service_session


@contextlib.contextmanager
def operation(args: argparse.Namespace, name: str, *, lock: bool = True) -> Iterator[Session]:
    """Open `--home` for `name` (see `service.session.operation`); notices go to stderr."""
    with service_session.operation(getattr(args, "home", None), name, note,
                                   lock=lock) as session:
        yield session
