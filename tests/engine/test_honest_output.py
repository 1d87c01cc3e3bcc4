"""Output lines that used to mislead (issue 25, item 5), each as the user sees it."""

from __future__ import annotations

import shlex
import signal
import subprocess
from collections.abc import Callable

import pytest

from fleet import Device
from roam_core.merge.memory import merge_memory


def synced_pair(make_device: Callable[..., Device]) -> tuple[Device, Device]:
    desk, laptop = make_device("desk"), make_device("laptop")
    desk.write("SOUL.md", "soul\n")
    desk.write("memories/MEMORY.md", "one")
    desk.roam("init", "--create-remote")
    desk.roam("push")
    laptop.roam("init")
    return desk, laptop


def test_a_just_joined_device_says_it_has_not_pulled(make_device: Callable[..., Device]) -> None:
    _desk, laptop = synced_pair(make_device)
    out = laptop.roam("status").out
    assert "None" not in out
    assert "local:   not pulled yet" in out
    assert "remote is 1 generation(s) ahead (from desk, " in out


def test_status_counts_the_generations_the_remote_is_ahead(
        make_device: Callable[..., Device]) -> None:
    desk, laptop = synced_pair(make_device)
    laptop.roam("pull", "--apply")
    for text in ("two\n", "three\n"):
        desk.write("SOUL.md", text)
        desk.roam("push")
    out = laptop.roam("status").out
    assert "state:   remote is 2 generation(s) ahead (from desk, " in out
    assert "run roam pull" in out


def test_a_restricted_pull_names_the_generation_it_stays_at(
        make_device: Callable[..., Device]) -> None:
    desk, laptop = synced_pair(make_device)
    laptop.roam("pull", "--apply")
    desk.write("SOUL.md", "new soul\n")
    desk.roam("push")
    out = laptop.roam("pull", "--apply", "--only", "SOUL.md").out
    assert "unchanged" not in out.split("installed", 1)[1]
    assert "this device stays at generation 1" in out


def test_push_and_pull_name_the_covered_home_and_profiles_first(
        make_device: Callable[..., Device]) -> None:
    desk, laptop = synced_pair(make_device)
    desk.write("profiles/work/SOUL.md", "work\n")
    desk.write("SOUL.md", "x\n")
    pushed = desk.roam("push")
    first = pushed.out.splitlines()[0]
    assert first == f"roam: home {desk.root}; profiles: work (synced)"
    pulled = laptop.roam("pull")
    assert pulled.out.splitlines()[0] == f"roam: home {laptop.root}; profiles: none"
    assert "roam: home" not in laptop.roam("pull", "-q").out
    assert "roam: home" not in desk.roam("push", "-q").out


def test_the_first_pull_union_names_the_keys_it_kept(make_device: Callable[..., Device]) -> None:
    desk, laptop = make_device("desk"), make_device("laptop")
    with (desk.root / "config.yaml").open("a") as handle:
        handle.write("model:\n  default: big-model\ndisplay:\n  skin: midnight\n")
    with (laptop.root / "config.yaml").open("a") as handle:
        handle.write("model:\n  default: small-model\n")
    desk.roam("init", "--create-remote")
    desk.roam("push")
    laptop.roam("init")
    out = laptop.roam("pull").out
    assert "config kept local (first pull, your value stays): config.yaml: model.default" in out


def test_the_memory_merge_keeps_a_trailing_newline() -> None:
    local = "mine\n§\nshared\n".encode()
    remote = "shared\n§\ntheirs".encode()
    merged = merge_memory(b"shared", local, remote)
    assert merged is not None
    assert merged.data.decode() == "mine\n§\nshared\n§\ntheirs\n"
    # Hermes's own form (no trailing newline) stays without one
    plain = merge_memory(b"shared", "mine\n§\nshared".encode(), remote)
    assert plain is not None and not plain.data.endswith(b"\n")


def test_a_missing_plugin_gets_the_exact_quoted_command(
        make_device: Callable[..., Device]) -> None:
    a, b = make_device("a"), make_device("b")
    plugin = a.root / "plugins" / "weather"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: weather\nversion: 1.2.0\n")
    source = "https://example.invalid/we ather;touch pwned.git"
    for args in (["init", "-q"], ["remote", "add", "origin", source]):
        subprocess.run(["git", *args], cwd=plugin, check=True, capture_output=True)
    a.write("SOUL.md", "s\n")
    a.roam("init", "--create-remote")
    a.roam("push")
    b.roam("init")
    out = b.roam("pull").out
    assert f"hermes plugins install {shlex.quote(source)}" in out


def test_an_interrupt_after_the_install_committed_is_not_reported_as_interrupted(
        make_device: Callable[..., Device], backend_kind: str) -> None:
    if backend_kind == "memory":
        pytest.skip("a real process cannot reach the in-process memory store")
    _desk, laptop = synced_pair(make_device)
    run = laptop.run("pull", "--apply", env={"ROAM_TEST_KILL_AT": "journal:committed",
                                             "ROAM_TEST_KILL_SIGNAL": "SIGINT"})
    assert "interrupted" not in run.stderr.replace("interrupted after", "")
    assert run.returncode == 0, run.stderr
    assert "installed" in run.stdout and "the install had already completed" in run.stdout
    assert laptop.read("SOUL.md") == "soul\n"
    assert signal.SIGINT  # the signal a terminal's Ctrl-C sends
