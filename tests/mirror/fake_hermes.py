"""A stand-in for Hermes 0.19's `agent.redact`, for roam processes that tests start."""

from __future__ import annotations

from pathlib import Path

FAKE_AGENT_REDACT = '''
"""A stand-in for Hermes 0.19's agent.redact (tests only)."""
import re


def redact_sensitive_text(text, *, force=False, **_ignored):
    return re.sub(r"HERMES-ONLY-SECRET", "[hermes-redacted]", text)
'''


def write_fake_agent(folder: Path) -> Path:
    """Write the fake `agent` package under `folder` (put `folder` on PYTHONPATH)."""
    (folder / "agent").mkdir(parents=True, exist_ok=True)
    (folder / "agent" / "__init__.py").write_text("")
    (folder / "agent" / "redact.py").write_text(FAKE_AGENT_REDACT)
    return folder
