"""Issue 19 item 3: YAML aliases and JSON nesting are bounded wherever roam reads them.

A 406-byte config.yaml with five levels of nested aliases used to take seconds and ~200 MB
to push and rewrote the other device's config.yaml as megabytes of expanded text.
"""

from __future__ import annotations

import resource
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet import Device
from roam_core import boundedjson
from roam_core.config import merge_config, shared_projection
from roam_core.errors import ConfigError, IntegrityError, UserError
from roam_core.scope.rulesfile import parse_rules
from roam_core.settings import load_settings
from roam_core.store.objects import parse_json
from roam_core.tiers.cron import parse_jobs


def alias_bomb(levels: int, fan: int = 9) -> str:
    """A billion-laughs document: each level lists the previous one `fan` times."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * fan) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]"
              for i in range(1, levels + 1)]
    return "\n".join(lines) + "\nmodel: gpt\n"


@pytest.mark.parametrize("levels", [5, 9])
def test_alias_bomb_is_refused_fast_and_small(levels: int) -> None:
    shared_projection("model: x\n")  # imports, so only the parse is measured
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        shared_projection(alias_bomb(levels), source="config.yaml")
    _size, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - started < 5  # it was ~6 s (5 levels) and endless (9)
    assert peak < 20 * 1024 * 1024
    message = str(raised.value)
    assert message.startswith("config.yaml") and "alias" in message and "\n" not in message


def test_alias_bomb_in_config_fails_push_with_one_line(make_device) -> None:
    a: Device = make_device("a")
    assert a.roam("init", "--create-remote").code == 0
    (a.root / "config.yaml").write_text(a.read("config.yaml") + alias_bomb(5))
    started = time.monotonic()
    result = a.roam("push")
    assert time.monotonic() - started < 10
    assert result.code == 1, (result.out, result.err)
    assert "Traceback" not in result.err
    assert "config.yaml" in result.err and "alias" in result.err


def test_aliases_never_travel_into_another_devices_config(make_device) -> None:
    a: Device = make_device("a")
    b: Device = make_device("b")
    a.write("SOUL.md", "soul\n")
    assert a.roam("init", "--create-remote").code == 0
    settings = a.read("config.yaml")
    # aliases inside a key this device keeps to itself are fine: they never leave
    (a.root / "config.yaml").write_text(
        settings + "terminal: &t {shell: zsh}\nbrowser: {executable: /usr/bin/x}\n"
        "display:\n  interface: *t\nmodel: gpt\n")
    assert a.roam("push").code == 0, a.roam("push").err
    # an alias in a travelling key is refused, naming the file, line and key
    (a.root / "config.yaml").write_text(
        settings + "defaults: &d {temperature: 1}\nagent:\n  <<: *d\n  name: x\n")
    result = a.roam("push")
    assert result.code == 1
    assert "config.yaml:" in result.err and "agent" in result.err and "alias" in result.err
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert "&" not in b.read("config.yaml") and "model: gpt" in b.read("config.yaml")


def test_remote_projection_with_aliases_is_refused() -> None:
    remote = "a: &x {b: 1}\nc: *x\n"
    with pytest.raises(ConfigError, match=r"remote config projection:2: YAML aliases"):
        merge_config("model: x\n", None, remote)


def test_small_aliases_stay_readable_locally(tmp_path) -> None:
    """Settings and rules with a few aliases still load: only bombs are refused."""
    (tmp_path / "config.yaml").write_text(
        "x: &n 3\nplugins:\n  entries:\n    roam:\n      settings:\n        backup_keep: *n\n")
    assert load_settings(tmp_path)["backup_keep"] == 3
    assert parse_rules("shared: &s ['a/**']\nlocal: *s\n", "rules.yaml").rules


def test_every_yaml_reader_refuses_bombs(tmp_path) -> None:
    bomb = "shared:\n  " + alias_bomb(9).replace("\n", "\n  ")
    (tmp_path / "config.yaml").write_text(bomb)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"config\.yaml: YAML aliases expand"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match=r"rules\.yaml: YAML aliases expand"):
        parse_rules(bomb, "rules.yaml")
    assert time.monotonic() - started < 2


def test_json_from_the_store_is_bounded() -> None:
    deep = b"[" * 100 + b"]" * 100
    with pytest.raises(ValueError, match="nested deeper"):
        boundedjson.loads(deep, "tree")
    with pytest.raises(IntegrityError, match="not valid JSON"):
        parse_json(b'{"v": 1, "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "tree t")
    with pytest.raises(UserError, match=r"cron/jobs\.json"):
        parse_jobs(b'{"jobs": [' + b"[" * 70 + b"]" * 70 + b"]}", "cron/jobs.json")


@settings(max_examples=40, deadline=None)
@given(levels=st.integers(1, 12), fan=st.integers(2, 16), depth=st.integers(0, 3000),
       flow=st.booleans())
def test_fuzz_bombs_and_deep_nesting_end_within_seconds(levels: int, fan: int, depth: int,
                                                        flow: bool) -> None:
    nested = ("a: " + "{b: " * depth + "1" + "}" * depth) if flow else "a:\n" + "".join(
        "  " * i + "- \n" for i in range(1, min(depth, 400)))
    high_water = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for text in (alias_bomb(levels, fan), nested, alias_bomb(levels, fan) + nested):
        started = time.monotonic()
        try:
            shared_projection(text, source="config.yaml")
        except ConfigError as error:
            assert str(error).startswith("config.yaml")
        assert time.monotonic() - started < 3
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < high_water + 64 * 1024
    with pytest.raises(ValueError):
        boundedjson.loads(b"[" * (depth + 65) + b"]" * (depth + 65), "x")
