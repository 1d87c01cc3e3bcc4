"""Issue 22: a pull's new files get 0644 under the home's umask, read once per plan.

Reading the umask from /proc for each new file cost a pull of 20,000 files seconds on a busy
machine (about 4 s of a 65 s profile): the planner reads it once.
"""

from __future__ import annotations

import os
import stat

import pytest

from roam_core.engine import scan


def test_new_files_follow_the_umask_read_once_per_pull(make_device,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    desk, laptop = make_device("desk"), make_device("laptop")
    for number in range(12):
        desk.write(f"skills/s{number}/SKILL.md", f"skill {number}\n")
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0
    reads: list[int] = []
    original = scan.read_umask

    def counted() -> int:
        reads.append(1)
        return original()

    monkeypatch.setattr(scan, "read_umask", counted)
    monkeypatch.setattr("roam_core.engine.plan.read_umask", counted, raising=False)
    monkeypatch.setattr("roam_core.engine.journal.read_umask", counted)
    old = os.umask(0o027)
    try:
        result = laptop.roam("pull", "--apply")
    finally:
        os.umask(old)
    assert result.code == 0, result.err
    for number in range(12):
        mode = stat.S_IMODE((laptop.root / f"skills/s{number}/SKILL.md").stat().st_mode)
        assert mode == 0o640, oct(mode)
    # the plan's and the install's, not one per new file
    assert len(reads) <= 2, len(reads)
