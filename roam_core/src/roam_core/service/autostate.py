"""Auto sync's own small state, its two switches, and a cheap "did shared files change" probe.

State lives in `<root>/roam/auto.json` (never synced, like all of `roam/`):

* `last_push_at`, `last_push_fingerprint`: the last SUCCESSFUL automatic push; the
  debounce is measured from it, so only a successful push consumes it.
* `pending`: set before an automatic push starts and cleared only when it succeeded, so
  a push that failed or was killed (the process exited under it) is still there at the
  next session start, which turns it into a one-line notice.
* `notices`: one-line notices stashed by background checks, shown once by `pre_llm_call`.

The switches `auto_push` and `auto_pull_shared` live in the root config.yaml under
`plugins.entries.roam.settings`, written with comments and key order kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from roam_core.home import STATE_DIRNAME

STATE_FILE = "auto.json"
SWITCHES = ("auto_push", "auto_pull_shared")

#: What may be shared, for the change probe only (the engine's scope rules decide what
#: actually syncs; a false "changed" costs one no-op push, a miss waits for the next edit).
SHARED_TOP = ("config.yaml", "SOUL.md", "memories", "skills", "skins")
_SKIP_DIRS = {"__pycache__", ".git", ".hub", "node_modules", ".venv"}


def state_dir(root: Path) -> Path:
    return root / STATE_DIRNAME


def initialized(root: Path) -> bool:
    """Whether `roam init` has run for this root home."""
    from roam_core.engine.state import STATE_FILE as ENGINE_STATE

    return (state_dir(root) / ENGINE_STATE).is_file()


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    from roam_core.fs import ensure_private_dir, write_atomic

    if path.parent.name == STATE_DIRNAME:
        ensure_private_dir(path.parent)
    write_atomic(path, text.encode("utf-8"), mode=mode)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    from roam_core.fs import ensure_private_dir

    directory = ensure_private_dir(state_dir(root))
    with open(directory / "auto.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def load(root: Path) -> dict[str, Any]:
    """The auto-sync state (empty when none or unreadable: it is only a cache of facts)."""
    try:
        data = json.loads((state_dir(root) / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update(root: Path, change: Callable[[dict[str, Any]], Any]) -> Any:
    """Apply `change` to the state under a lock and save it; returns what `change` returned."""
    with _locked(root):
        data = load(root)
        result = change(data)
        _write(state_dir(root) / STATE_FILE, json.dumps(data, indent=1, sort_keys=True))
        return result


def take_notices(root: Path) -> list[str]:
    """Remove and return the stashed notices, plus the pending-push notice, if any."""

    def take(data: dict[str, Any]) -> list[str]:
        notices = [str(n) for n in data.pop("notices", []) or []]
        pending = data.get("pending")
        if isinstance(pending, dict) and not pending.get("noticed"):
            reason = pending.get("reason") or "it did not finish (the process ended under it)"
            notices.insert(0, f"the last automatic roam push failed: {reason}. "
                              "Run /roam push or `hermes roam push` to retry.")
            pending["noticed"] = True
        return notices

    current = load(root)
    pending = current.get("pending")
    if not current.get("notices") and not (isinstance(pending, dict)
                                           and not pending.get("noticed")):
        return []
    return list(update(root, take))


def stash_notice(root: Path, notice: str) -> None:
    """Keep one notice for the next first turn (the same text is kept once)."""

    def add(data: dict[str, Any]) -> None:
        notices = data.setdefault("notices", [])
        if notice not in notices:
            notices.append(notice)

    update(root, add)


def fingerprint(root: Path) -> str:
    """A cheap digest of the names, sizes and mtimes of the files that may be shared."""
    digest = hashlib.sha256()
    homes = [root]
    profiles = root / "profiles"
    if profiles.is_dir():
        homes += sorted(p for p in profiles.iterdir() if p.is_dir())
    for home in homes:
        for top in SHARED_TOP:
            _digest_tree(home / top, root, digest)
    return digest.hexdigest()


def _digest_tree(path: Path, root: Path, digest: Any) -> None:
    try:
        info = path.stat()
    except OSError:
        return
    if path.is_file():
        rel = path.relative_to(root).as_posix()
        digest.update(f"{rel}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            _digest_tree(Path(dirpath) / name, root, digest)


def write_switches(root: Path, values: dict[str, Any]) -> None:
    """Set keys of `plugins.entries.roam.settings` in the root config.yaml, keeping comments."""
    from roam_core.settings import write_settings

    write_settings(root, values)
