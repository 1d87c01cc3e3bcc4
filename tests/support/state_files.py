"""The device state as tests read and plant it: `state.json`'s form over `roam/state.db`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roam_core.engine.statedb import STATE_DB, export


def read_state(root: Path) -> dict[str, Any]:
    """The home's state as one JSON object (what `state.json` held)."""
    found = export(root / "roam")
    assert found is not None, f"{root} has no state"
    return found


def plant_legacy(root: Path, data: dict[str, Any] | str) -> None:
    """Leave the state as an earlier roam wrote it (`state.json`), to be migrated on first use."""
    state_dir = root / "roam"
    for name in (STATE_DB, f"{STATE_DB}-journal"):
        (state_dir / name).unlink(missing_ok=True)
    text = data if isinstance(data, str) else json.dumps(data)
    (state_dir / "state.json").write_text(text)
