"""What `roam mirror status` reports: enabled sinks, spool depth, held turns, last errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from roam_core.errors import RoamError
from roam_core.mirror.config import enabled_sinks, settings_for
from roam_core.mirror.spool import Spool


def _given_up(rejected: Any) -> list[dict[str, Any]]:
    """The turns a sink gave up on, oldest first (older states stored only the reason)."""
    found = []
    for event_id, detail in (rejected or {}).items():
        detail = detail if isinstance(detail, dict) else {"reason": str(detail)}
        found.append({"event_id": event_id, "session": str(detail.get("session", "")),
                      "reason": str(detail.get("reason", "")),
                      "at": float(detail.get("at", 0) or 0)})
    return sorted(found, key=lambda item: item["at"])


def mirror_status(root: Path) -> dict[str, Any]:
    """A JSON-ready summary of the mirror of the root home `root`."""
    spool = Spool(root)
    try:
        names = enabled_sinks(settings_for(root))
        settings_error = ""
    except RoamError as error:
        names, settings_error = [], str(error)
    state = spool.read_state() if spool.dir.exists() else {}
    events = spool.events() if spool.dir.exists() else []
    held = state.get("held", {}) if isinstance(state.get("held"), dict) else {}
    raw = [e for e in events if not e.redacted]
    now = time.time()
    sinks: list[dict[str, Any]] = []
    for name in names:
        record = state.get("sinks", {}).get(name, {})
        done = spool.delivered(name) if spool.dir.exists() else set()
        rejected = record.get("rejected", {})
        pending = [e for e in events if e.event_id not in done and e.event_id not in rejected]
        terminal = record.get("terminal")
        backoff = float(record.get("backoff_until", 0) or 0)
        given_up = _given_up(rejected)
        if terminal:
            condition = "stopped"
        elif backoff > now:
            condition = "retrying"
        elif record.get("last_error") and record.get("failures"):
            condition = "failing"
        elif given_up:
            condition = "given up"
        else:
            condition = "ok"
        sinks.append({
            "name": name,
            "status": condition,
            "pending": len(pending),
            "rejected": len(rejected),
            "given_up": given_up,
            "last_delivery_at": record.get("last_delivery_at"),
            "last_error": (terminal or {}).get("reason") or record.get("last_error") or "",
            "last_error_at": (terminal or {}).get("at") or record.get("last_error_at"),
            "retry_in": max(0.0, round(backoff - now, 1)) if backoff > now else 0.0,
        })
    return {
        "enabled": bool(names),
        "sinks": sinks,
        "spooled": len(events),
        "held": len(raw),
        "held_reason": (next(iter(held.values()), "") or "waiting for redaction") if raw else "",
        "error": settings_error or state.get("error", ""),
        "spool": str(spool.dir),
    }
