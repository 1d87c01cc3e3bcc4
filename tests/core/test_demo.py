from __future__ import annotations

from pathlib import Path

from support.cli import run_roam


def test_roam_demo_runs_the_main_job(tmp_path: Path) -> None:
    result = run_roam("demo", "--dir", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "roam: pushed generation 1" in out
    assert "run roam pull --apply to install" in out
    assert "merged memories: memories/MEMORY.md" in out
    assert "DIFFERS" not in out and "LEAKED" not in out and "OVERWRITTEN" not in out
    assert out.rstrip().endswith("roam demo: done")
    laptop = tmp_path / "demo" / "laptop"
    assert not (laptop / "auth.json").exists()
    assert "sk-demo-secret" not in (laptop / ".env").read_text()
