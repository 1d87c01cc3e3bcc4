"""Fixtures for the optional tiers: clean environment, Hermes homes on one local store."""

from __future__ import annotations

from support.hermes_env import (  # noqa: F401
    clean_roam_env,
    hermes_homes,
    hermes_venv,
    stub_model,
)


