"""A key one device declares host-scoped must not be deleted on the other devices.

Found while writing the user guide: `host_keys: [display.skin]` in device A's rules.yaml
removes `display.skin` from A's pushed projection, and device B's next pull reads that as the
key being deleted and drops B's own `display.skin`. A host key says "this device's value is
its own", not "delete it everywhere": the projection carries the fleet's value forward for
keys the pushing device keeps to itself.
"""

from __future__ import annotations


def test_host_key_declared_on_one_device_survives_elsewhere(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul\n")
    config = a.read("config.yaml")
    a.write("config.yaml", config + "display:\n  skin: midnight\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert "skin: midnight" in b.read("config.yaml")
    a.write("roam/rules.yaml", "host_keys:\n  - display.skin\n")
    a.write("SOUL.md", "soul 2\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert b.read("SOUL.md") == "soul 2\n"
    assert "skin: midnight" in b.read("config.yaml")
