"""Keys a device keeps to itself carry the fleet's value forward instead of deleting it."""

from __future__ import annotations

import yaml

from roam_core.config import merge_config, shared_projection


def meaning(text: str) -> dict:
    return yaml.safe_load(text)


def test_a_device_host_key_carries_the_accepted_value() -> None:
    local = "display:\n  skin: dawn\n  personality: terse\n"
    base = "display:\n  skin: midnight\n  personality: terse\n"
    without = shared_projection(local, host_keys=("display.skin",))
    assert meaning(without) == {"display": {"personality": "terse"}}
    carried = shared_projection(local, host_keys=("display.skin",), base=base)
    assert meaning(carried) == {"display": {"personality": "terse", "skin": "midnight"}}
    # a key absent here but host-scoped here is carried too
    assert meaning(shared_projection("a: 1\n", host_keys=("display",), base=base)) == {
        "a": 1, "display": {"skin": "midnight", "personality": "terse"}}


def test_a_local_home_path_or_secret_carries_the_fleet_value() -> None:
    local = "notes: /home/alice/notes\nmodel:\n  default: m\n  api_key: sk-abcdefghijklmnop1234\n"
    base = "notes: ~/notes\nmodel:\n  default: m\n"
    assert meaning(shared_projection(local, base=base)) == {"notes": "~/notes",
                                                            "model": {"default": "m"}}


def test_carried_values_are_still_cleaned() -> None:
    base = "notes: /home/bob/notes\nskin: {name: x, token: abc}\n"
    carried = shared_projection("notes: /home/alice/n\n", host_keys=("skin",), base=base)
    assert meaning(carried) == {"skin": {"name": "x"}}


def test_a_local_non_mapping_is_not_overwritten_by_carrying() -> None:
    carried = shared_projection("display: plain\n", host_keys=("display.skin",),
                                base="display:\n  skin: midnight\n")
    assert meaning(carried) == {"display": "plain"}


def test_two_devices_one_of_which_keeps_a_key_to_itself() -> None:
    """The flow behind tests/engine/test_host_key_on_one_device.py, at the library level."""
    keeps = ("display.skin",)
    b_config = "# b\ndisplay:\n  skin: midnight  # b's choice\n"
    pushed_by_b = shared_projection(b_config)
    a_config = "# a\ndisplay:\n  skin: dawn\nmodel: m\n"
    on_a = merge_config(a_config, None, pushed_by_b, host_keys=keeps)
    assert meaning(on_a.text)["display"]["skin"] == "dawn"
    assert meaning(on_a.accepted_projection) == {"display": {"skin": "midnight"}}
    pushed_by_a = shared_projection(on_a.text, host_keys=keeps, base=on_a.accepted_projection)
    assert meaning(pushed_by_a)["display"]["skin"] == "midnight"
    on_b = merge_config(b_config, pushed_by_b, pushed_by_a)
    assert meaning(on_b.text) == {"display": {"skin": "midnight"}, "model": "m"}
    assert "# b's choice" in on_b.text
    # without the base, A's push would have deleted B's key
    naive = merge_config(b_config, pushed_by_b, shared_projection(on_a.text, host_keys=keeps))
    assert "skin" not in meaning(naive.text).get("display", {})


def test_a_conflict_keeps_the_raw_base_value_in_the_accepted_projection() -> None:
    base = "display:\n  skin: midnight\n"
    result = merge_config("display:\n  skin: dawn\n", base, "display:\n  skin: noon\n",
                          host_keys=("display.personality",))
    assert result.conflicts == ["display.skin"]
    assert meaning(result.accepted_projection) == {"display": {"skin": "midnight"}}
