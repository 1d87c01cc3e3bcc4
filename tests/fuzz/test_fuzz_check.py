"""`roam check` on a hostile store: every problem is a reported row, never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_store import KEYS, _plain, _repo, _store, _write_tree, json_values, trees

from roam_core import crypto
from roam_core.deadline import Deadline
from roam_core.engine.check import Checker
from roam_core.errors import RoamError
from roam_core.store.objects import Head, canonical, snapshot_key


def _session(repo: Any, state_dir: Path) -> Any:
    return SimpleNamespace(backend=repo.backend, keys=KEYS, max_file_size=1 << 30,
                           state_dir=state_dir, state=lambda: None,
                           deadline=Deadline.after(600, "check"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees | json_values, json_values, st.booleans(), st.booleans())
def test_check_reports_whatever_the_store_holds(entries: Any, extra: Any, read_data: bool,
                                                chained: bool) -> None:
    repo = _repo()
    root = _write_tree(repo, entries)
    parent = None
    if chained:  # an older generation whose snapshot is itself hostile
        parent = _store(repo, crypto.KIND_SNAPSHOT, _plain(extra), snapshot_key)
    value = {"v": 1, "generation": 1 if chained else 0, "parent": parent, "device": "m",
             "created": "c", "root": root, "roam_version": "0", "files": 0, "bytes": 0}
    snapshot_id = _store(repo, crypto.KIND_SNAPSHOT, canonical(value), snapshot_key)
    head = Head(value["generation"], snapshot_id, "s" * 32, "m", "t")
    repo.write_head(head, None)
    with tempfile.TemporaryDirectory() as state_dir:
        try:
            report = Checker(_session(repo, Path(state_dir)), read_data=read_data).run()
        except RoamError:
            return
    assert report.head_generation == head.generation
    assert all(problem.object and problem.message for problem in report.problems)
    if chained:
        assert not report.ok, "a hostile parent snapshot is a problem"
