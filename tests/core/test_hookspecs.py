from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from roam_core import hookspecs
from roam_core.manager import hook_names

REPO = Path(__file__).resolve().parents[2]


def test_there_are_hooks() -> None:
    assert set(hook_names()) >= {"roam_storage_backends", "roam_scope_rules",
                                 "roam_session_sinks"}


def test_every_hookspec_has_a_docstring() -> None:
    for name in hook_names():
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 80, f"hookspec {name} needs a docstring that states its contract"


#: For every hookspec, tests that drive it end to end through a real plugin (a temporary
#: distribution found through its entry point, or a module registered with the manager) and
#: check what the hook changes. A new hookspec fails this file until it has a row here.
BEHAVIOUR = {
    "roam_storage_backends": [
        "tests/core/test_manager.py::test_third_party_plugin_from_dist_info_is_listed",
        "tests/core/test_manager.py::test_duplicate_backend_names_fail_naming_both_distributions",
    ],
    "roam_scope_rules": [
        "tests/scope/test_providers.py::test_provider_tiers_follow_device_settings",
        "tests/core/test_manager.py::test_rules_listing_evaluates_providers_against_the_home",
    ],
    "roam_session_sinks": [
        "tests/core/test_manager.py::test_session_sinks_facade_and_missing_sink_hint",
    ],
    "roam_merge_formats": [
        "tests/merge/test_merge_format_e2e.py"
        "::test_a_plugin_format_merges_a_file_both_devices_changed",
    ],
}


def test_every_hookspec_has_behavioural_tests_that_pass(tmp_path: Path) -> None:
    assert set(BEHAVIOUR) == set(hook_names()), "every hookspec needs a row in BEHAVIOUR"
    ids = [test_id for tests in BEHAVIOUR.values() for test_id in tests]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-o", "addopts=",
         "--basetemp", str(tmp_path / "run"), *ids],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    tail = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    assert f"{len(ids)} passed" in result.stdout, tail


def test_every_hookspec_is_documented() -> None:
    docs = "\n".join(p.read_text() for p in (REPO / "docs").rglob("*.md"))
    for name in hook_names():
        assert name in docs, f"docs/ never documents hook {name}"
