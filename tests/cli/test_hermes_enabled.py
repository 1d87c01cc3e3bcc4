"""doctor and `auto status` say when Hermes has roam installed but will not run it."""

from __future__ import annotations

import subprocess

import yaml

from roam_core.service.enablement import version_note
from support.hermes_env import HomeFactory, hermes_homes, hermes_venv, stub_model  # noqa: F401


def _roam(home, *args: str) -> subprocess.CompletedProcess[str]:
    """The standalone `roam` installed in Hermes's own environment, on this Hermes home."""
    return subprocess.run([str(home.venv.bin / "roam"), "--home", str(home.path), *args],
                          env=home.env(), capture_output=True, text=True, timeout=120)


def test_not_enabled_then_enabled_then_disabled(
        hermes_homes: HomeFactory) -> None:  # noqa: F811 - the fixture imported above
    home = hermes_homes.new("plain", enable_roam=False)
    doctor = _roam(home, "doctor")
    assert "Hermes plugin: warn" in doctor.stdout or "not enabled in Hermes" in doctor.stdout
    assert "roam is installed but not enabled in Hermes" in doctor.stdout, doctor.stdout
    auto = _roam(home, "auto", "status")
    assert "warning: roam is installed but not enabled in Hermes" in auto.stdout, auto.stdout
    enabled = home.hermes("plugins", "enable", "roam", "--no-allow-tool-override")
    assert enabled.returncode == 0, enabled.stderr
    assert "not enabled" not in _roam(home, "auto", "status").stdout
    assert "enabled in Hermes 0.19" in _roam(home, "doctor").stdout
    config = yaml.safe_load((home.path / "config.yaml").read_text())
    config["plugins"]["disabled"] = ["roam"]  # the deny-list wins over plugins.enabled
    (home.path / "config.yaml").write_text(yaml.safe_dump(config))
    assert "listed under plugins.disabled" in _roam(home, "auto", "status").stdout


def test_a_hermes_outside_the_tested_range_is_named() -> None:
    assert version_note("0.19.3") is None
    assert "outside the versions roam was tested with (0.19.x)" in version_note("0.23.0")
