"""roam lists the plugins another home has and never installs code."""

from __future__ import annotations

import subprocess

from fleet import Device


def _git(cwd, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def test_pull_lists_missing_plugins_with_install_command(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    plugin = a.root / "plugins" / "weather"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: weather\nversion: 1.2.0\n")
    (plugin / "__init__.py").write_text("def register(ctx):\n    pass\n")
    _git(plugin, "init", "-q")
    _git(plugin, "add", ".")
    _git(plugin, "commit", "-qm", "x")
    _git(plugin, "remote", "add", "origin", "https://user:hunter2@example.invalid/weather.git")
    a.write("SOUL.md", "s\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    inventory = (a.root / "roam" / "installed-plugins.json").read_text()
    assert '"weather"' in inventory and "hunter2" not in inventory
    b.roam("init")
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.err
    assert ("plugin missing here: weather 1.2.0 — hermes plugins install "
            "https://example.invalid/weather.git") in result.out
    assert not (b.root / "plugins").exists(), "roam never installs plugin code"
    plan = b.roam("pull", "--json").json()
    assert [p["name"] for p in plan["plugins_missing"]] == ["weather"]


def test_inventory_is_not_installed_over_the_local_one(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "s\n")
    a.roam("init", "--create-remote")
    a.roam("push")
    b.roam("init")
    b.roam("pull", "--apply")
    assert not (b.root / "roam" / "installed-plugins.json").exists() or (
        "weather" not in (b.root / "roam" / "installed-plugins.json").read_text())
    assert isinstance(Device, type)
