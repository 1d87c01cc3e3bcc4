"""Where the Hermes home is, and the root home a profile maps up to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: The folder inside the root home that holds everything roam writes for itself.
STATE_DIRNAME = "roam"


@dataclass(frozen=True)
class Home:
    """A resolved home: the root roam operates on, and the profile the user was in."""

    root: Path
    profile: str = "default"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIRNAME

    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"


def resolve_home(explicit: str | os.PathLike[str] | None = None) -> Home:
    """`--home DIR`, else `$HERMES_HOME`, else `~/.hermes`; a profile maps up to its root.

    A path of the form `<root>/profiles/<name>` is a profile home: roam always operates on
    the root, with the root's settings and lock, and remembers the profile's name.
    """
    raw = explicit or os.environ.get("HERMES_HOME") or "~/.hermes"
    path = Path(raw).expanduser().absolute()
    if path.parent.name == "profiles" and path.parent.parent != path.parent:
        return Home(root=path.parent.parent, profile=path.name)
    return Home(root=path)
