from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest

from roam_core.testing.contract import BackendContract
from roam_core.testing.memory import MemoryBackend, MemoryStore


class TestMemoryBackend(BackendContract):
    skip: ClassVar[dict[str, list[str]]] = {
        "an in-process reference backend: no entry point, and its store lives in one "
        "process's memory": ["test_the_backend_loads_through_its_entry_point",
                             "test_ref_race_across_processes_has_one_winner_each_round"]}

    @pytest.fixture
    def backend_factory(self):
        store = MemoryStore()
        return lambda: MemoryBackend(store)


BROKEN = '''
import pytest
from roam_core.errors import RefConflict
from roam_core.testing.contract import BackendContract
from roam_core.testing.memory import MemoryBackend, MemoryStore


class Overwriting(MemoryBackend):
    """Breaks create-once: a second put_new silently overwrites."""
    def put_new(self, key, data):
        with self.store.lock:
            self.store.objects[key] = bytes(data)


class NoCas(MemoryBackend):
    """Breaks compare-and-swap: last writer wins."""
    def swap_ref(self, name, data, expected_version):
        with self.store.lock:
            current = self.store.refs.get(name)
            version = 1 if current is None else current[1] + 1
            self.store.refs[name] = (bytes(data), version)
        return str(version)


IN_PROCESS = {"in-process only": ["test_the_backend_loads_through_its_entry_point",
                                   "test_ref_race_across_processes_has_one_winner_each_round"]}


class TestOverwriting(BackendContract):
    skip = IN_PROCESS

    @pytest.fixture
    def backend_factory(self):
        store = MemoryStore()
        return lambda: Overwriting(store)


class TestNoCas(BackendContract):
    skip = IN_PROCESS

    @pytest.fixture
    def backend_factory(self):
        store = MemoryStore()
        return lambda: NoCas(store)
'''


def test_the_suite_fails_a_broken_backend(tmp_path: Path) -> None:
    test_file = tmp_path / "test_broken_backend.py"
    test_file.write_text(textwrap.dedent(BROKEN))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
         "--rootdir", str(tmp_path), str(test_file)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    assert result.returncode == 1, result.stdout[-2000:]
    failed = {line.split("::")[-1].split(" ")[0] for line in result.stdout.splitlines()
              if line.startswith("FAILED")}
    assert "test_put_new_refuses_existing_key_and_keeps_original" in failed
    assert "test_concurrent_put_new_has_one_winner" in failed
    assert "test_swap_ref_create_twice_conflicts" in failed
    assert "test_swap_ref_with_stale_version_conflicts_and_keeps_winner" in failed
    assert "test_ref_race_has_exactly_one_winner" in failed


CRASHING_PLUGIN = '''
raise RuntimeError("this plugin cannot even be imported")
'''

CONTRACT_OF_CRASHING_PLUGIN = '''
import pytest
from roam_core.testing.contract import BackendContract
from roam_core.testing.memory import MemoryBackend, MemoryStore


class TestCrashing(BackendContract):
    backend_name = "crashing"

    @pytest.fixture
    def backend_factory(self):
        store = MemoryStore()
        return lambda: MemoryBackend(store)
'''


def test_the_suite_fails_a_backend_whose_plugin_raises_at_import(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "crashing_roam.py").write_text(CRASHING_PLUGIN)
    info = site / "crashing_roam-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crashing-roam\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[roam.plugins]\ncrashing = crashing_roam\n")
    test_file = tmp_path / "test_crashing_backend.py"
    test_file.write_text(textwrap.dedent(CONTRACT_OF_CRASHING_PLUGIN))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
         "--rootdir", str(tmp_path), str(test_file), "-k", "entry_point"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(site)})
    assert result.returncode == 1, result.stdout[-2000:]
    assert "test_the_backend_loads_through_its_entry_point" in result.stdout
    assert "cannot even be imported" in result.stdout
