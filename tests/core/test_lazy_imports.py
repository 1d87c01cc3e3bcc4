from __future__ import annotations

import subprocess
import sys

#: `re2` (google-re2) is the push scan's compiled run search: only a scan imports it.
HEAVY = ("boto3", "botocore", "git", "httpx", "hermes_cli", "agent", "run_agent", "stevedore",
         "re2")


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return set(out.split())


def test_importing_roam_core_is_cheap() -> None:
    modules = _imported_after("import roam_core, roam_core.cli.main")
    assert not modules & set(HEAVY), modules & set(HEAVY)


def test_roam_version_imports_nothing_heavy() -> None:
    code = ("import sys\nsys.argv=['roam','--version']\nfrom roam_core.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    modules = _imported_after(code)
    assert not modules & set(HEAVY), modules & set(HEAVY)


def test_the_testing_package_loads_its_suites_on_first_use() -> None:
    assert "pytest" not in _imported_after("import roam_core.testing")
    modules = _imported_after("from roam_core.testing import BackendContract, SinkContract")
    assert {"pytest", "roam_core.testing.contract", "roam_core.testing.sink_contract"} <= modules


def test_the_push_scan_worker_imports_only_the_scanner() -> None:
    # a fresh interpreter per large push: what it imports is its start-up time
    modules = _imported_after("import roam_core.secretscan.worker")
    assert not modules & set(HEAVY), modules & set(HEAVY)
    roam = {name for name in modules if name.startswith("roam_core.")}
    assert not {name for name in roam if not name.startswith(("roam_core.secretscan",
                                                                "roam_core.errors"))}, roam
    # nor roam's version: reading the installed distributions' metadata (importlib.metadata,
    # email, zipfile) was most of the worker's start-up
    assert "importlib.metadata" not in modules
