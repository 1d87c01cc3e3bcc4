"""The backend passes roam's storage contract as shipped: subclass, one fixture, done."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from roam_core.plugin import BackendContract

from roam_backend_example.backend import SqliteBackend


class TestSqliteBackend(BackendContract):
    # {reason: [test names]} for any duty this backend documents it cannot meet; none here.
    skip: ClassVar[dict[str, list[str]]] = {}
    # The name the entry point registers: the suite loads the plugin through it, as roam does.
    backend_name = "example"

    @pytest.fixture
    def backend_factory(self, tmp_path: Path):
        path = tmp_path / "store.sqlite"
        SqliteBackend(path).create_remote()
        return lambda: SqliteBackend(path)
