"""A device whose last-synced generation was forgotten and pruned still merges its memories.

A pull merges a memory file both sides changed entry by entry, against the base: the version
this device last synced, read from the store. When the fleet's retention forgets that
generation and a prune frees its blobs (a laptop away for weeks), the base is gone from the
store: the pull stopped with `integrity error: packs/… is missing from the store` and the
device could not pull again. It now merges without the base, keeping every entry either
side holds (an entry one side removed comes back: nothing is lost). Found by the pruning
campaign on git (seed 763512967).
"""

from __future__ import annotations

from pathlib import Path

from campaign.harness import Home, Runner, stores


def test_a_pull_merges_memories_whose_base_generation_was_pruned(tmp_path: Path) -> None:
    with stores("local", tmp_path) as store:
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        assert desk.roam("init", "--create-remote").code == 0
        desk.write("memories/MEMORY.md", "first\n§\nsecond\n")
        assert desk.roam("push").code == 0
        assert laptop.roam("init").code == 0
        assert laptop.roam("pull", "--apply").code == 0
        # the laptop goes away with a change of its own; the desk moves on for weeks
        laptop.write("memories/MEMORY.md", "first\n§\nsecond\n§\nfrom the laptop\n")
        for week in range(3):
            desk.write("memories/MEMORY.md",
                       "first\n§\nsecond\n" + "".join(f"§\nweek {n}\n" for n in range(week + 1)))
            assert desk.roam("push").code == 0
        forget = desk.roam("forget", "--keep-last", "1", "--apply")
        assert forget.code == 0, forget.err
        prune = desk.roam("prune", "--apply", "--grace-minutes", "0")
        assert prune.code == 0, prune.err
        pulled = laptop.roam("pull", "--apply")
        assert pulled.code == 0, pulled.err
        merged = (laptop.root / "memories" / "MEMORY.md").read_text()
        for entry in ("first", "second", "from the laptop", "week 0", "week 1", "week 2"):
            assert entry in merged, merged
        assert laptop.roam("push").code == 0
        assert desk.roam("pull", "--apply").code == 0
        assert "from the laptop" in (desk.root / "memories" / "MEMORY.md").read_text()
