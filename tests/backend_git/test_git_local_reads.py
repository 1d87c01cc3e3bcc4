"""After its one fetch a git store is read from the mirror on this disk, as a local store is.

Reads never leave the machine (the fetch brought every object; writes are staged and leave in
one push), so core must read it as it reads a local directory: spans of a few MiB from one
reader thread, and no copy of each tree under roam/cache (the mirror holds them already). As
a remote store the large home's pull read whole packs in five threads, held two of them
ahead and created a file per tree: 5.36 s of processor time and 186 MiB at its peak against
4.00 s and 136 MiB (docs/decisions.md, "The git mirror").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key

from roam_backend_git.backend import GitBackend
from roam_core.store.spans import LOCAL_SPANS
from support.git_remotes import bare_repo, file_url


def _fleet(tmp_path: Path) -> tuple[Home, Home]:
    repo = bare_repo(tmp_path, "store.git")
    store = Store("git", {"backend": "git", "git_remote": file_url(repo)}, key=new_key())
    runner = Runner()
    desk = Home(tmp_path / "desk", "desk", store, runner)
    laptop = Home(tmp_path / "laptop", "laptop", store, runner)
    for number in range(30):  # folders enough for many trees, files enough for many spans
        desk.write(f"skills/group{number % 6}/skill{number}/SKILL.md", f"s{number}\n" * 50)
        desk.write(f"skills/group{number % 6}/skill{number}/refs/a.bin", bytes([number]) * 9000)
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0
    return desk, laptop


def _shared(home: Home, under: str = "skills/") -> dict[str, bytes]:
    return {rel: data for rel, data in home.files().items() if rel.startswith(under)}


def test_a_pull_keeps_no_copy_of_the_trees_the_mirror_holds(tmp_path: Path) -> None:
    desk, laptop = _fleet(tmp_path)
    assert laptop.roam("pull", "--apply").code == 0
    assert _shared(laptop) == _shared(desk)
    # a copy is named by its tree's id (reached.json beside them is a note, not a copy)
    copies = [path for path in (laptop.root / "roam" / "cache" / "trees").rglob("*")
              if path.is_file() and len(path.name) == 64]
    assert copies == []


def test_a_pull_reads_the_mirror_in_a_local_stores_spans(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    desk, laptop = _fleet(tmp_path)
    for number in range(20):  # 10 MiB of ciphertext in one pack: a remote span reads it whole
        desk.write(f"skills/media/clip{number}.bin", os.urandom(512 * 1024))
    assert desk.roam("push").code == 0
    lengths: list[int] = []
    original = GitBackend.get

    def get(self: GitBackend, key: str, offset: int = 0, length: int | None = None) -> bytes:
        if key.startswith("packs/") and length is not None:
            lengths.append(length)
        return original(self, key, offset, length)

    monkeypatch.setattr(GitBackend, "get", get)
    assert laptop.roam("pull", "--apply").code == 0
    assert _shared(laptop, "skills/media/") == _shared(desk, "skills/media/")
    assert lengths and max(lengths) <= LOCAL_SPANS.limit
