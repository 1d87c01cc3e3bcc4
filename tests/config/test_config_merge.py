"""The config merge on configs with comments: union, three-way, conflicts, overwrite."""

from __future__ import annotations

import yaml

from roam_core.config import merge_config, shared_projection

LOCAL = """\
# Hermes config on the laptop
model:
  default: gpt-4o          # the one I like
  provider: openrouter
  api_key: sk-laptopsecret0000000000000

# appearance
display:
  skin: mono               # dark terminal
  interface: tui

terminal:
  backend: local
  cwd: /home/alice/work
toolsets:
- hermes-cli
- web
"""


def proj(text: str) -> str:
    return shared_projection(text)


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def meaning(text: str) -> dict:
    return yaml.safe_load(text)


def test_remote_only_change_merges_and_comments_survive() -> None:
    base = proj(LOCAL)
    remote = proj(edit(LOCAL, "skin: mono", "skin: dracula"))
    result = merge_config(LOCAL, base, remote)
    assert result.remote_applied == ["display.skin"]
    assert result.conflicts == [] and result.local_kept == []
    assert result.changed and result.comments_kept
    # the inline comment keeps its column
    assert result.text == edit(LOCAL, "skin: mono   ", "skin: dracula")
    assert result.accepted_projection == remote


def test_local_only_change_stays() -> None:
    base = proj(LOCAL)
    mine = edit(LOCAL, "default: gpt-4o", "default: gpt-5")
    result = merge_config(mine, base, base)
    assert not result.changed and result.text == mine
    assert result.remote_applied == [] and result.conflicts == []
    # the accepted base is the remote: the local edit is a change to publish on the next push
    assert result.accepted_projection == base
    assert proj(mine) != result.accepted_projection


def test_both_sides_changed_is_a_conflict_kept_local() -> None:
    base = proj(LOCAL)
    mine = edit(LOCAL, "default: gpt-4o", "default: gpt-5")
    remote = proj(edit(edit(LOCAL, "default: gpt-4o", "default: claude"),
                       "skin: mono", "skin: nord"))
    result = merge_config(mine, base, remote)
    assert result.conflicts == ["model.default"]
    assert result.remote_applied == ["display.skin"]
    assert "default: gpt-5          # the one I like" in result.text
    assert "skin: nord" in result.text and "# appearance" in result.text
    # the conflict stays a conflict: the accepted base keeps the old value for that key
    accepted = meaning(result.accepted_projection)
    assert accepted["model"]["default"] == "gpt-4o"
    assert accepted["display"]["skin"] == "nord"
    again = merge_config(result.text, result.accepted_projection, remote)
    assert again.conflicts == ["model.default"] and not again.changed


def test_overwrite_takes_the_remote_value() -> None:
    base = proj(LOCAL)
    mine = edit(LOCAL, "default: gpt-4o", "default: gpt-5")
    remote = proj(edit(LOCAL, "default: gpt-4o", "default: claude"))
    result = merge_config(mine, base, remote, overwrite_conflicts=True)
    assert result.conflicts == [] and result.overwritten == ["model.default"]
    assert "default: claude         # the one I like" in result.text
    assert "# Hermes config on the laptop" in result.text
    assert result.accepted_projection == remote


def test_first_pull_is_a_union_where_local_wins() -> None:
    remote_home = """\
model:
  default: claude
  provider: openrouter
display:
  skin: nord
  personality: terse
memory:
  memory_char_limit: 3000
"""
    result = merge_config(LOCAL, None, proj(remote_home))
    assert result.local_kept == ["model.default", "display.skin"]
    assert result.remote_applied == ["display.personality", "memory"]
    data = meaning(result.text)
    assert data["model"]["default"] == "gpt-4o"
    assert data["display"] == {"skin": "mono", "interface": "tui", "personality": "terse"}
    assert data["memory"] == {"memory_char_limit": 3000}
    assert "# dark terminal" in result.text and "# appearance" in result.text
    # new keys land after their predecessor in the remote's order
    assert result.text.index("personality: terse") > result.text.index("skin: mono")
    wholesale = merge_config(LOCAL, None, proj(remote_home), overwrite_conflicts=True)
    assert meaning(wholesale.text)["model"]["default"] == "claude"
    assert wholesale.overwritten == ["model.default", "display.skin"]


def test_host_keys_and_secrets_are_always_kept_from_the_local_file() -> None:
    base = proj(LOCAL)
    other_machine = """\
model:
  default: gpt-4o
  provider: openrouter
  api_key: sk-desktopsecret00000000000000
display:
  skin: mono
  interface: cli
terminal:
  backend: docker
toolsets: [hermes-cli, web]
"""
    remote = proj(other_machine)
    assert "desktopsecret" not in remote and "docker" not in remote
    result = merge_config(LOCAL, base, remote)
    assert not result.changed
    # even a projection that carries them (an older or hostile remote) cannot overwrite them
    raw = yaml.safe_dump(yaml.safe_load(other_machine))
    forced = merge_config(LOCAL, base, raw, overwrite_conflicts=True)
    data = meaning(forced.text)
    assert data["model"]["api_key"] == "sk-laptopsecret0000000000000"
    assert data["terminal"] == {"backend": "local", "cwd": "/home/alice/work"}
    assert data["display"]["interface"] == "tui"
    assert "desktopsecret" not in forced.accepted_projection


def test_a_local_home_path_value_is_never_replaced() -> None:
    local = "notes: /home/alice/notes   # mine\nskin: mono\n"
    remote = proj("notes: ~/notes\nskin: mono\n")
    assert remote == "notes: ~/notes\nskin: mono\n"
    for base in (None, proj(local)):
        result = merge_config(local, base, remote, overwrite_conflicts=True)
        assert meaning(result.text)["notes"] == "/home/alice/notes", base
        assert result.remote_applied == [] and not result.changed


def test_device_host_keys_are_kept_local() -> None:
    base = proj(LOCAL)
    remote = proj(edit(LOCAL, "skin: mono", "skin: nord"))
    result = merge_config(LOCAL, base, remote, host_keys=("display.skin",))
    assert not result.changed and result.remote_applied == []


def test_a_remote_deletion_keeps_local_secrets_below_it() -> None:
    base = proj(LOCAL)
    remote_text = "display:\n  skin: mono\ntoolsets: [hermes-cli, web]\n"  # model removed
    result = merge_config(LOCAL, base, proj(remote_text))
    data = meaning(result.text)
    assert data["model"] == {"api_key": "sk-laptopsecret0000000000000"}
    assert "model.default" in result.remote_applied and "model.provider" in result.remote_applied
    replaced = merge_config(LOCAL, base, proj("model: just-a-name\n" + remote_text),
                            overwrite_conflicts=True)
    assert meaning(replaced.text)["model"]["api_key"].startswith("sk-laptop")
    assert replaced.conflicts == ["model"]


def test_deleting_a_key_and_lists_as_one_value() -> None:
    base = proj(LOCAL)
    remote = proj(edit(edit(LOCAL, "- web\n", "- web\n- browser\n"), "  provider: openrouter\n",
                       ""))
    result = merge_config(LOCAL, base, remote)
    data = meaning(result.text)
    assert data["toolsets"] == ["hermes-cli", "web", "browser"]
    assert "provider" not in data["model"]
    assert "# the one I like" in result.text


def test_no_local_file_takes_the_remote_projection() -> None:
    remote = proj(LOCAL)
    result = merge_config(None, None, remote)
    assert result.changed and result.text == remote
    assert result.remote_applied == ["model", "display", "toolsets"]


def test_yaml_1_1_values_survive_the_round_trip() -> None:
    local = "# octal the YAML 1.1 way\nmode: 0777\nflag: yes\nskin: mono\n"
    result = merge_config(local, proj(local), proj(edit(local, "mono", "nord")))
    assert result.text == edit(local, "mono", "nord") and result.comments_kept


def test_a_round_trip_that_would_change_meaning_falls_back_to_plain_yaml() -> None:
    # `on` is the boolean true to Hermes (YAML 1.1) but a string to the round-trip parser
    local = "# a YAML 1.1 boolean key\non: 1\nskin: mono\n"
    result = merge_config(local, proj(local), proj("on: 2\nskin: nord\n"))
    assert meaning(result.text) == {True: 2, "skin": "nord"}
    assert result.comments_kept is False
    assert result.remote_applied == ["True", "skin"]


def test_indentation_style_is_kept() -> None:
    local = "# four spaces\nmodel:\n    default: a\n    provider: b\ntoolsets:\n  - x\n  - y\n"
    result = merge_config(local, proj(local), proj(local.replace("provider: b", "provider: c")))
    assert result.text == local.replace("provider: b", "provider: c")


def test_malformed_inputs_name_their_source() -> None:
    import pytest

    from roam_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^config\.yaml:2: mapping values"):
        merge_config("a: 1\n  b: 2\n", None, "{}\n")
    with pytest.raises(ConfigError, match=r"^remote config projection:1: "):
        merge_config("a: 1\n", None, "- x\n")
