"""`roam demo`: checks its backend first, cleans up its temporary folder unless --keep."""

from __future__ import annotations

from pathlib import Path

from support.cli import roam_env, run_roam


def test_the_demo_removes_its_temporary_folder_and_says_so(tmp_path: Path) -> None:
    result = run_roam("demo", env=roam_env(TMPDIR=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.glob("roam-demo-*")) == []
    assert "removed" in result.stdout and "--keep" in result.stdout


def test_the_demo_keeps_its_folder_with_keep(tmp_path: Path) -> None:
    result = run_roam("demo", "--keep", env=roam_env(TMPDIR=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    kept = list(tmp_path.glob("roam-demo-*"))
    assert len(kept) == 1 and (kept[0] / "laptop" / "SOUL.md").exists()
    assert f"kept {kept[0]}" in result.stdout


def test_the_demo_checks_its_backend_first(tmp_path: Path) -> None:
    env = roam_env(TMPDIR=str(tmp_path), ROAM_DISABLED_PLUGINS="local")
    result = run_roam("demo", env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "roam: roam demo needs the local backend: pip install 'roam-core[local]'"]
    assert list(tmp_path.glob("roam-demo-*")) == []
