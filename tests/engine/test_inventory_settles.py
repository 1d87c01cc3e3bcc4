"""Two devices with different Hermes plugins must settle after one pull and push each.

Found while writing the user guide: `roam/installed-plugins.json` is rewritten from this
device's plugins before every push, but a pull keeps the remote's copy as the base. So on
two devices whose plugins differ, every pull leaves "1 local change" (the inventory), status
says "ahead — run roam push" forever, and each push publishes a new generation that makes the
other device ahead again. Fixed in the engine (the inventory is not a local change).
"""

from __future__ import annotations


def test_devices_with_different_plugins_settle(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("plugins/foo/plugin.yaml", "name: foo\nversion: 1\n")
    a.write("SOUL.md", "soul\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert b.roam("push").code == 0
    assert a.roam("pull", "--apply").code == 0
    # Both have seen each other's generation and nobody changed a file: both in sync.
    for device in (a, b):
        status = device.roam("status", "--json").json()
        assert status["dirty"] == 0, (device.name, status["changes"])
