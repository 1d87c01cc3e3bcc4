"""The probe behind carrying modes forward on file systems without them (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

from roam_core.engine import filemodes


def test_a_posix_file_system_keeps_modes_and_the_answer_is_recorded(tmp_path: Path) -> None:
    assert filemodes.keeps_modes(tmp_path) is True
    record = json.loads((tmp_path / filemodes.RECORD_FILE).read_text())
    assert record == {"device": tmp_path.stat().st_dev, "keeps_modes": True}
    assert [p.name for p in tmp_path.iterdir()] == [filemodes.RECORD_FILE]  # probe removed


def test_the_record_is_trusted_on_the_same_disk_and_probed_again_on_another(
        tmp_path: Path) -> None:
    record = tmp_path / filemodes.RECORD_FILE
    record.write_text(json.dumps({"device": tmp_path.stat().st_dev, "keeps_modes": False}))
    assert filemodes.keeps_modes(tmp_path) is False
    record.write_text(json.dumps({"device": -1, "keeps_modes": False}))  # home moved
    assert filemodes.keeps_modes(tmp_path) is True
    record.write_text("not json")
    assert filemodes.keeps_modes(tmp_path) is True


def test_a_home_not_initialised_is_not_probed(tmp_path: Path) -> None:
    assert filemodes.keeps_modes(tmp_path / "roam") is True
    assert not (tmp_path / "roam").exists()
