"""The campaign on hostile storage: packs lost and older HEADs replayed between steps.

Every so often the fleet goes quiet (every device holds the head generation), then the store
misbehaves in one of two ways:

- it **replays** an older, authentic HEAD: every device must refuse it (`rollback refused`,
  nothing installed, the home unchanged), `roam check` must name `roam check --repair`, and
  the repair must publish HEAD at the head generation again;
- it **loses a pack**: `roam check` must name `roam check --repair`; each device repairs in
  turn; then every file of the head generation (whose bytes the devices hold) must read back
  byte-exact again. Older versions no device still holds are lost for good: they are recorded,
  the repair must name them, and the final checks skip them. A lost tree pack (format 2)
  can take the trees of older generations no device holds any more: their versions count as
  lost unless another generation gives them back.

P1 (no data loss of what a device holds) and "never installs an older generation" are
checked at every event; the ordinary campaign's checks run on every other step.
"""

from __future__ import annotations

import re

from campaign.checks import check_no_canary, close_repository
from campaign.driver import Campaign
from campaign.hostile import head_state, keys, lose, replay_head
from campaign.storeview import generations, manifest_of, open_repository

from roam_core.errors import IntegrityError
from roam_core.store.repository import Repository

#: Steps between hostile events (each after a quiet round).
EVENT_EVERY = 12
_USE = re.compile(r"\(file '([^']+)', generation (\d+)\)")
#: a lost tree (format 2) hides a whole folder: the check names the generation and folder
_BELOW = re.compile(r"generation (\d+): the files below '([^']*)' cannot be read")


class HostileCampaign(Campaign):
    """`Campaign` with a store that loses packs and serves old HEADs."""

    def setup(self) -> None:
        super().setup()
        self.heads: dict[int, object] = {0: head_state(self.store)}
        self.lost: set[tuple[str, bytes]] = set()
        self.events = {"replayed": 0, "packs lost": 0}

    def run(self, count: int) -> None:
        done = 0
        while done < count:
            chunk = min(EVENT_EVERY, count - done)
            super().run(chunk)
            done += chunk
            self.quiet_round()
            if self.rng.random() < 0.5 and len(self.heads) > 1:
                self.replay()
            else:
                self.lose_pack()

    def step_push(self, index: int, force: bool = False) -> None:
        super().step_push(index, force)
        self.heads.setdefault(self.fleet.head, head_state(self.store))

    # -- events ---------------------------------------------------------------------------------

    def replay(self) -> None:
        generation = self.rng.choice([g for g in self.heads if g < self.fleet.head])
        self.log.append(f"store replays HEAD of generation {generation}")
        self.events["replayed"] += 1
        replay_head(self.store, self.heads[generation])
        for index in range(len(self.devices)):
            ran = self.command(index, "pull", "--apply")
            self.expect(ran, 1, "pull of a replayed HEAD")
            assert "rollback refused" in ran[0].err, ran[0].err
            assert ran[1] == ran[2], "a refused pull changed the home"
        self._repair_and_pull(self.rng.randrange(len(self.devices)))

    def lose_pack(self) -> None:
        packs = keys(self.store, "packs/")
        if not packs:
            return
        with open_repository(self.store, self.root / "hostile-view") as repo:
            head = repo.read_head()
            assert head is not None
            # a blob of the head generation may name a pack lost earlier (its bytes were
            # stored again elsewhere): only a pack the store still holds can be lost now
            present = set(packs)
            used = sorted({ref[1] for entry in repo.load_manifest(
                repo.load_snapshot(head.snapshot).root).values() for ref in entry.blobs
                if ref[1] in present})
        # mostly a pack the head generation needs: the repair must then bring it back
        pack = self.rng.choice(used if used and self.rng.random() < 0.75 else packs)
        self.log.append(f"store loses {pack}")
        self.events["packs lost"] += 1
        lose(self.store, pack)
        first = self.rng.randrange(len(self.devices))
        order = [first] + [i for i in range(len(self.devices)) if i != first]
        for index in order[:-1]:
            self.expect(self.command(index, "check", "--repair"), (0, 1), "check --repair")
        self._repair_and_pull(order[-1])

    def _repair_and_pull(self, index: int) -> None:
        """`check` names the repair; the repair restores HEAD and the head generation."""
        checked = self.command(index, "check")
        if checked[0].code:
            assert "roam check --repair" in checked[0].out, checked[0].out
        repaired = self.command(index, "check", "--repair", "--json")
        self.expect(repaired, (0, 1), "check --repair")
        # a fresh view: what the store holds now, found as any device would find it
        with open_repository(self.store, self.root / "hostile-view") as repo:
            head = repo.read_head()
            assert head is not None and head.generation == self.fleet.head, \
                (head, self.fleet.head)
            self._record_lost(repo, repaired[0].json()["remaining"]["problems"])
        for dev in self.devices:  # every device pulls (and would refuse an older generation)
            self.pull(self.devices.index(dev), overwrite=False)

    def _record_lost(self, repo: Repository, problems: list[dict[str, str]]) -> None:
        """Versions that no longer read back; none may belong to the head generation."""
        unreadable = unreadable_versions(self, repo) - self.lost
        held = set(self.fleet.versions[self.fleet.head].items())
        assert not unreadable & held, (
            f"P1: the head generation does not read back after repair: "
            f"{sorted(rel for rel, _ in unreadable & held)}")
        named = {(m.group(1), int(m.group(2))) for p in problems
                 for m in [_USE.search(p["message"])] if m}
        treeless = {int(m.group(1)) for p in problems for m in [_BELOW.search(p["message"])] if m}
        for rel, data in unreadable:
            gens = {g for g, files in self.fleet.versions.items() if files.get(rel) == data}
            # the store view cannot load a generation whose tree is lost, so it counts all
            # of that generation's versions as lost: the check naming the generation's lost
            # folders is all a repair can say of them
            assert any((rel, g) in named for g in gens) or named or gens & treeless, \
                (f"the repair did not name the lost {rel} (generations {sorted(gens)}); it said: "
                 f"{[problem['message'][:200] for problem in problems]}")
        self.lost |= unreadable

    # -- steps that read old versions ------------------------------------------------------------

    def step_restore(self, index: int) -> None:
        versions = self.fleet.versions
        if getattr(self, "trees_lost", False) or any(
                (rel, data) in self.lost for files in versions.values()
                for rel, data in files.items()):
            return  # restoring a version lost for good is expected to fail: not modelled
        super().step_restore(index)

    def step_check(self, index: int) -> None:
        # a lost version may be readable again after a push stored the same bytes anew
        lost = self.lost or getattr(self, "trees_lost", False)
        self.expect(self.command(index, "check", "--read-data"), (0, 1) if lost else 0,
                    "check --read-data")


def unreadable_versions(run: Campaign, repo: Repository) -> set[tuple[str, bytes]]:
    """Every pushed (path, bytes) that the store does not give back byte-exact."""
    stored = generations(repo)
    assert sorted(stored) == sorted(run.fleet.versions), "P1: generations are missing"
    unreadable: set[tuple[str, bytes]] = set()
    readable: set[tuple[str, bytes]] = set()
    treeless: list[dict[str, bytes]] = []
    for generation, files in sorted(run.fleet.versions.items()):
        try:
            manifest = manifest_of(repo, stored[generation][1])
        except IntegrityError:
            # format 2: a lost tree pack took trees only this generation had (no device
            # holds it to write them again); its versions count as lost unless another
            # generation gives them back
            treeless.append(files)
            run.trees_lost = True  # type: ignore[attr-defined]
            continue
        for rel, data in files.items():
            if (rel, data) in unreadable or (rel, data) in readable:
                continue
            try:
                ok = repo.read_content(manifest[rel]) == data
            except IntegrityError:
                ok = False
            (readable if ok else unreadable).add((rel, data))
    for files in treeless:
        unreadable.update(item for item in files.items() if item not in readable)
    return unreadable


def play_hostile(run: HostileCampaign, steps: int) -> None:
    """Set up, take `steps` steps with hostile events, then the final checks.

    As the ordinary campaign's, except that versions lost for good (no device held their
    bytes when their pack was lost) are not asked of the store: every other one must read
    back byte-exact, no object may hold a canary, and `check --read-data` may only fail on
    the lost ones.
    """
    try:
        run.setup()
        run.run(steps)
        run.quiet_round()
        with open_repository(run.store, run.root / "final-view") as repo:
            left = unreadable_versions(run, repo)
        assert left <= run.lost, f"P1: versions lost though no pack was: {sorted(left - run.lost)}"
        check_no_canary(run)
        result = run.devices[0].home.roam("check", "--read-data", "--json")
        report = result.json()
        assert report["head_generation"] == run.fleet.head
        assert result.code == 0 or run.lost or getattr(run, "trees_lost", False), \
            f"roam check --read-data: {result.out}"
    finally:
        close_repository(run)
