"""Hermes memory files merge entry by entry (issue 14)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roam_core.merge import EntryMerge, is_memory_file, merge_memory, parse_entries

D = "\n§\n"


def mem(*entries: str) -> bytes:
    """Entries as Hermes writes them: joined by '\\n§\\n', no trailing newline."""
    return D.join(entries).encode()


def entries(result: EntryMerge | None) -> list[str]:
    assert result is not None
    parsed = parse_entries(result.data)
    assert parsed is not None
    return parsed


BASE = mem("User prefers dark mode", "Project lives in ~/src/roam", "Deploys on Fridays")


def test_two_machines_each_add_entries_and_both_end_with_all() -> None:
    synced = BASE
    laptop = mem("User prefers dark mode", "Project lives in ~/src/roam", "Deploys on Fridays",
                 "Laptop: uses fish shell")
    desktop = mem("User prefers dark mode", "Project lives in ~/src/roam", "Deploys on Fridays",
                  "Desktop: has a GPU", "Desktop: second monitor")
    # the laptop pushes; the desktop pulls and merges
    on_desktop = merge_memory(synced, desktop, laptop)
    assert on_desktop is not None and on_desktop.changed
    assert (on_desktop.added_remote, on_desktop.kept_local, on_desktop.removed) == (1, 0, 0)
    assert entries(on_desktop) == ["User prefers dark mode", "Project lives in ~/src/roam",
                                   "Deploys on Fridays", "Desktop: has a GPU",
                                   "Desktop: second monitor", "Laptop: uses fish shell"]
    # the desktop pushes the merged file; the laptop (whose base is what it pushed) pulls
    on_laptop = merge_memory(laptop, laptop, on_desktop.data)
    assert on_laptop is not None
    assert on_laptop.data == on_desktop.data  # same entries, same order, same bytes
    assert on_laptop.added_remote == 2
    # and nothing more happens on the next round
    settled = merge_memory(on_desktop.data, on_desktop.data, on_laptop.data)
    assert settled is not None and not settled.changed


def test_deletions_carry_from_either_side() -> None:
    without = mem("User prefers dark mode", "Deploys on Fridays")
    remote_deleted = merge_memory(BASE, BASE, without)
    assert entries(remote_deleted) == ["User prefers dark mode", "Deploys on Fridays"]
    assert remote_deleted is not None and remote_deleted.removed == 1
    local_deleted = merge_memory(BASE, without, BASE)
    assert local_deleted is not None and not local_deleted.changed
    assert local_deleted.data == without


def test_one_sided_edits_carry() -> None:
    remote = mem("User prefers dark mode (solarized)", "Project lives in ~/src/roam",
                 "Deploys on Fridays")
    local = mem("User prefers dark mode", "Project lives in ~/src/roam",
                "Deploys on Fridays after 3pm")
    result = merge_memory(BASE, local, remote)
    assert entries(result) == ["User prefers dark mode (solarized)",
                               "Project lives in ~/src/roam", "Deploys on Fridays after 3pm"]
    assert result is not None and result.changed_remote == 1 and result.conflicts == []


def test_both_sides_edit_the_same_entry_is_a_conflict_kept_local() -> None:
    local = mem("User prefers dark mode", "Project lives in ~/src/roam-core",
                "Deploys on Fridays")
    remote = mem("User prefers dark mode", "Project lives in ~/code/roam",
                 "Deploys on Fridays", "New remote fact")
    kept = merge_memory(BASE, local, remote)
    assert kept is not None
    assert entries(kept) == ["User prefers dark mode", "Project lives in ~/src/roam-core",
                             "Deploys on Fridays", "New remote fact"]
    assert kept.conflicts == ["Project lives in ~/code/roam"]
    assert (kept.added_remote, kept.kept_local) == (1, 1)
    taken = merge_memory(BASE, local, remote, overwrite_conflicts=True)
    assert taken is not None
    assert entries(taken) == ["User prefers dark mode", "Project lives in ~/code/roam",
                              "Deploys on Fridays", "New remote fact"]
    assert taken.kept_local == 0 and taken.conflicts == ["Project lives in ~/code/roam"]


def test_edited_here_and_deleted_there_is_a_conflict() -> None:
    local = mem("User prefers dark mode", "Project lives in ~/src/roam (monorepo)",
                "Deploys on Fridays")
    remote = mem("User prefers dark mode", "Deploys on Fridays")
    kept = merge_memory(BASE, local, remote)
    assert kept is not None and not kept.changed and kept.kept_local == 1
    assert kept.conflicts == ["(deleted remotely) Project lives in ~/src/roam (monorepo)"]
    taken = merge_memory(BASE, local, remote, overwrite_conflicts=True)
    assert entries(taken) == ["User prefers dark mode", "Deploys on Fridays"]


def test_deleted_here_and_edited_there_is_a_conflict() -> None:
    local = mem("User prefers dark mode", "Deploys on Fridays")
    remote = mem("User prefers dark mode", "Project lives in ~/src/roam (monorepo)",
                 "Deploys on Fridays")
    kept = merge_memory(BASE, local, remote)
    assert kept is not None and not kept.changed
    assert kept.conflicts == ["Project lives in ~/src/roam (monorepo)"]
    taken = merge_memory(BASE, local, remote, overwrite_conflicts=True)
    assert "Project lives in ~/src/roam (monorepo)" in entries(taken)


def test_exact_duplicates_are_kept_once() -> None:
    local = BASE + D.encode() + b"Same new fact"
    remote = BASE + D.encode() + b"Same new fact"
    assert merge_memory(BASE, local, remote).changed is False  # type: ignore[union-attr]
    both = merge_memory(BASE, mem("a", "Same", "b"), mem("Same", "c", "Same"))
    assert entries(both).count("Same") == 1


def test_first_sync_is_a_union() -> None:
    result = merge_memory(None, mem("a", "b"), mem("b", "c", "d"))
    assert entries(result) == ["a", "b", "c", "d"]
    assert result is not None and result.added_remote == 2


def test_multiline_entries_and_hermes_spacing() -> None:
    local = b"  line one\nline two  \n\xc2\xa7\nsecond\n"
    assert parse_entries(local) == ["line one\nline two", "second"]
    result = merge_memory(local, local, local + D.encode() + b"third")
    assert result is not None
    # the local file ended with a newline, so the merged one does too
    assert result.data == mem("line one\nline two", "second", "third") + b"\n"
    unchanged = merge_memory(local, local, local)
    assert unchanged is not None and unchanged.data == local and not unchanged.changed


@pytest.mark.parametrize(("base", "local", "remote"), [
    (None, b"\xff\xfe binary", mem("a")),
    (None, mem("a"), b"caf\xe9"),
    (mem("a"), mem("a"), b"nul\x00byte"),
    (b"\x89PNG\r\n\x1a\n\x00", mem("a"), mem("b")),
])
def test_not_an_entry_list_falls_back_to_whole_file(base: bytes | None, local: bytes,
                                                    remote: bytes) -> None:
    assert merge_memory(base, local, remote) is None


@pytest.mark.parametrize(("rel", "expected"), [
    ("memories/MEMORY.md", True), ("memories/USER.md", True),
    ("profiles/work/memories/MEMORY.md", True), ("profiles/work/memories/USER.md", True),
    ("memories/OTHER.md", False), ("skills/memories/MEMORY.md", False),
    ("profiles/a/b/memories/MEMORY.md", False), ("MEMORY.md", False),
])
def test_is_memory_file(rel: str, expected: bool) -> None:
    assert is_memory_file(rel) is expected


fact = st.text(alphabet="abcdefgh xyz\n.", min_size=1, max_size=24).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None)
@given(base=st.lists(fact, unique=True, max_size=8),
       added_a=st.lists(fact, unique=True, max_size=6),
       added_b=st.lists(fact, unique=True, max_size=6),
       data=st.data())
def test_concurrent_additions_on_two_devices_never_lose_an_entry(
        base: list[str], added_a: list[str], added_b: list[str], data: st.DataObject) -> None:
    new_a = [e for e in added_a if e not in base]
    new_b = [e for e in added_b if e not in base]
    # device A also deletes some of the base entries; B leaves them alone
    dropped = set(data.draw(st.lists(st.sampled_from(base), unique=True)) if base else [])
    device_a = mem(*[e for e in base if e not in dropped], *new_a)
    device_b = mem(*base, *new_b)
    synced = mem(*base)
    # A pushes first; B pulls, merges and pushes; A pulls
    on_b = merge_memory(synced, device_b, device_a)
    assert on_b is not None
    on_a = merge_memory(device_a, device_a, on_b.data)
    assert on_a is not None
    final_b, final_a = entries(on_b), entries(on_a)
    assert final_a == final_b
    for entry in [*new_a, *new_b]:
        assert entry in final_a
    for entry in dropped - set(new_a) - set(new_b):
        assert entry not in final_a
    assert len(final_a) == len(set(final_a))
