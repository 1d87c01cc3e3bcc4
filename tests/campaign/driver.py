"""The randomized multi-device campaign: random edits and roam commands, checked against the model.

One step is one random action on one random device. Edits change the home directly; roam
commands go through `FleetRun.command` (the checks every command must pass) and then
through the model's prediction for that command. Every `ROUND` steps and at the end the fleet
goes quiet and must converge (P2); at the end every pushed version must come back byte-exact
through `history` and `restore` (P1), no decrypted object may hold a canary (P3), and
`roam check --read-data` must pass.
"""

from __future__ import annotations

from campaign.fleetrun import (
    LOCAL_POOL,
    NARROW_ALWAYS,
    NARROW_TOGGLE,
    SECRET_FILES,
    SHARED_POOL,
    WORDS,
    Device,
    FleetRun,
)
from campaign.model import (
    CONFIG,
    DELIMITER,
    INVENTORY,
    MEMORY,
    config_keys,
    entries,
    sha,
    shared_keys,
)

from roam_core.config import shared_projection

ROUND = 100
BIG_FILE = "skills/beta/ref/data.txt"


class Campaign(FleetRun):
    """`run(steps)` drives the fleet; any broken property raises AssertionError."""

    def steps(self) -> list[tuple[int, str]]:
        return [(14, "edit"), (6, "append"), (4, "delete"), (3, "rename"), (5, "memory_add"),
                (3, "memory_edit"), (2, "memory_delete"), (5, "local_only"), (4, "config"),
                (2, "config_host"), (1, "secret"), (15, "push"), (4, "push_force"),
                (3, "pull_plan"), (12, "pull_apply"), (5, "pull_overwrite"), (4, "restore"),
                (2, "rules"), (2, "status"), (1, "check"), (1, "big")]

    def run(self, count: int) -> None:
        weights, names = zip(*self.steps(), strict=True)
        for number in range(1, count + 1):
            index = self.rng.randrange(len(self.devices))
            name = self.rng.choices(names, weights)[0]
            self.log.append(f"step {number}: {name} on {self.devices[index].model.name}")
            getattr(self, f"step_{name}")(index)
            if number % ROUND == 0 and number < count:
                self.quiet_round()

    # -- edits --------------------------------------------------------------------------------

    def pick(self, dev: Device, existing: bool | None = None) -> str:
        """A shared-pool path (existing or absent when asked)."""
        pool = [rel for rel in SHARED_POOL
                if existing is None or (dev.home.root / rel).is_file() == existing]
        return self.rng.choice(pool or list(SHARED_POOL))

    def step_edit(self, index: int) -> None:
        dev = self.devices[index]
        rel = self.pick(dev)
        dev.home.write(rel, self.content(dev, rel))

    def step_append(self, index: int) -> None:
        dev = self.devices[index]
        rel = self.pick(dev, existing=True)
        path = dev.home.root / rel
        old = path.read_bytes() if path.is_file() else b""
        dev.home.write(rel, old + self.content(dev, rel))

    def step_delete(self, index: int) -> None:
        dev = self.devices[index]
        rel = self.pick(dev, existing=True)
        (dev.home.root / rel).unlink(missing_ok=True)

    def step_rename(self, index: int) -> None:
        dev = self.devices[index]
        sources = [r for r in SHARED_POOL if (dev.home.root / r).is_file()
                   and dev.model.visible(r)]
        targets = [r for r in SHARED_POOL if not (dev.home.root / r).exists()
                   and dev.model.visible(r)]
        if sources and targets:  # only between visible paths: private content stays private
            source, target = self.rng.choice(sources), self.rng.choice(targets)
            data = (dev.home.root / source).read_bytes()
            (dev.home.root / source).unlink()
            dev.home.write(target, data)

    def step_big(self, index: int) -> None:
        dev = self.devices[index]
        size = 5 * 1024 * 1024 + 123 if self.rng.random() < 0.15 else 300 * 1024
        dev.home.write(BIG_FILE, self.rng.randbytes(size).replace(b"CANARY", b"canary"))

    def memory(self, dev: Device) -> tuple[str, list[str]]:
        rel = self.rng.choice(MEMORY)
        path = dev.home.root / rel
        return rel, entries(path.read_bytes()) if path.is_file() else []

    def write_memory(self, dev: Device, rel: str, items: list[str]) -> None:
        dev.home.write(rel, DELIMITER.join(items).encode())

    def step_memory_add(self, index: int) -> None:
        dev = self.devices[index]
        rel, items = self.memory(dev)
        self.write_memory(dev, rel, [*items, self.entry()])

    def step_memory_edit(self, index: int) -> None:
        dev = self.devices[index]
        rel, items = self.memory(dev)
        if items:
            at = self.rng.randrange(len(items))
            items[at] = items[at] + " " + self.rng.choice(WORDS)
            self.write_memory(dev, rel, items)

    def step_memory_delete(self, index: int) -> None:
        dev = self.devices[index]
        rel, items = self.memory(dev)
        if items:
            items.pop(self.rng.randrange(len(items)))
            self.write_memory(dev, rel, items)

    def step_local_only(self, index: int) -> None:
        dev = self.devices[index]
        rel = self.rng.choice(LOCAL_POOL)
        path = dev.home.root / rel
        action = self.rng.choice(("write", "write", "delete", "rename", "secret"))
        if action == "delete":
            path.unlink(missing_ok=True)
        elif action == "rename" and path.is_file():
            target = self.rng.choice([r for r in LOCAL_POOL if r != rel])
            data = path.read_bytes()
            path.unlink()
            dev.home.write(target, data)
        elif action == "secret":
            dev.home.write(self.rng.choice(SECRET_FILES), f"TOKEN={self.canary()}\n")
        else:
            dev.home.write(rel, self.content(dev, rel))

    def step_config(self, index: int) -> None:
        dev = self.devices[index]
        data = self.read_config(dev)
        choice = self.rng.randrange(4)
        if choice == 0:
            data.setdefault("model", {})["default"] = f"m{self.rng.randrange(6)}"
        elif choice == 1:
            data.setdefault("agent", {})["max_turns"] = self.rng.randrange(1, 50)
        elif choice == 2:
            agent = data.setdefault("agent", {})
            if "personality" in agent and self.rng.random() < 0.3:
                del agent["personality"]
            else:
                agent["personality"] = self.rng.choice(WORDS)
        else:
            data.setdefault("display", {})["skin"] = self.rng.choice(WORDS)
        self.write_config(dev, data)

    def step_config_host(self, index: int) -> None:
        dev = self.devices[index]
        key = self.rng.choice(("display.interface", "terminal.shell"))
        dev.model.host[key] = f"{dev.model.name}-{self.rng.randrange(1000)}"
        self.write_config(dev, self.read_config(dev))

    def step_secret(self, index: int) -> None:
        dev = self.devices[index]
        dev.canary_config = self.canary()
        self.write_config(dev, self.read_config(dev))

    def step_rules(self, index: int) -> None:
        dev = self.devices[2]  # the narrow device widens or narrows again
        model = dev.model
        model.local_rules = NARROW_ALWAYS if model.local_rules != NARROW_ALWAYS else (
            NARROW_ALWAYS + NARROW_TOGGLE)
        self.write_rules(dev)
        self.log.append(f"phone rules: local {list(model.local_rules)}")

    # -- roam commands ------------------------------------------------------------------------

    def step_status(self, index: int) -> None:
        report = self.expect(self.command(index, "status", "--json"), 0, "status").json()
        model = self.devices[index].model
        assert report["remote_generation"] == self.fleet.head, report
        assert report["behind"] == (model.synced != self.fleet.head), (report, model.synced)

    def step_check(self, index: int) -> None:
        self.expect(self.command(index, "check", "--read-data"), 0, "check --read-data")

    def step_push_force(self, index: int) -> None:
        # a forced push by the narrow device is where carrying forward can go wrong
        self.step_push(2 if self.rng.random() < 0.5 else index, force=True)

    def step_push(self, index: int, force: bool = False) -> None:
        from campaign.checks import verify_generation

        dev = self.devices[index]
        model, fleet = dev.model, self.fleet
        behind = model.synced != fleet.head
        # --yes: the campaign models what a confirmed forced push publishes
        ran = self.command(index, "push", "--json", *(["--force", "--yes"] if force else []))
        result, pre, _post = ran
        if behind and not force:
            self.expect(ran, 2, "P1: a device that is behind must not publish")
            return
        self.expect(ran, 0, "push")
        local = self.shared_files(dev, pre)
        inventory = dev.home.root / INVENTORY
        if inventory.is_file():  # rewritten by the push itself, from what is installed
            local[INVENTORY] = inventory.read_bytes()
        projection = None
        if CONFIG in pre:
            projection = shared_projection(pre[CONFIG].decode(), host_keys=()).encode()
        predicted = fleet.predict_push(model, local, projection, forced=behind)
        reference = fleet.versions[fleet.head] if behind else model.base
        report = result.json()
        if _without(predicted, INVENTORY) == _without(reference, INVENTORY):
            # the plugin inventory alone is not worth a generation
            assert report["nothing_to_push"], f"push published an unchanged home: {report}"
            return
        assert not report["nothing_to_push"], "push found nothing to publish but the home " \
            f"differs from its base: {sorted(set(predicted) ^ set(reference))}"
        assert report["generation"] == fleet.head + 1, report
        verify_generation(self, report["generation"], predicted)
        fleet.after_push(model, report["generation"], predicted,
                         shared_keys(config_keys(projection)))

    def step_pull_plan(self, index: int) -> None:
        self.expect(self.command(index, "pull"), 0, "pull (plan only)")

    def step_pull_apply(self, index: int) -> None:
        self.pull(index, overwrite=False)

    def step_pull_overwrite(self, index: int) -> None:
        self.pull(index, overwrite=True)

    def pull(self, index: int, overwrite: bool) -> None:
        from campaign.checks import check_config, check_memory

        dev = self.devices[index]
        pre = dev.home.files()
        expect = self.fleet.predict_pull(dev.model, self.shared_files(dev, pre), overwrite)
        args = ["pull", "--apply"] + (["--overwrite-conflicts"] if overwrite else [])
        ran = self.command(index, *args)
        # memory entries conflict by roam's alignment, which the model does not redo: the
        # plan's own lines say whether one was kept (its content is checked below)
        memory_kept = "  memory conflict kept local: " in ran[0].out
        kept = expect.kept or expect.config_conflicts or memory_kept
        self.expect(ran, 2 if kept else 0, " ".join(args))
        post = ran[2]
        for rel, data in expect.files.items():
            got = post.get(rel)
            assert got == data, (
                f"P1: after {' '.join(args)} {rel} on {dev.model.name} is "
                f"{_digest(got)}, expected {_digest(data)} (before: {_digest(pre.get(rel))}, "
                f"remote {_digest(self.fleet.versions[self.fleet.head].get(rel))}, base "
                f"{_digest(dev.model.base.get(rel))}, conflicts {sorted(dev.model.conflicts)})")
        for rel, (base, local, remote) in expect.merges.items():
            check_memory(rel, base, local, remote, post.get(rel), overwrite)
        check_config(dev, pre, post, expect.config)
        self.fleet.after_pull(dev.model, expect)
        dev.model.entry_open = {
            line.split(": ", 2)[1] for line in ran[0].out.splitlines()
            if line.startswith("  memory conflict kept local: ")}

    def step_restore(self, index: int) -> None:
        from campaign.checks import check_config

        dev = self.devices[index]
        choices = [(g, rel) for g, files in self.fleet.versions.items() for rel in files
                   if rel != INVENTORY]
        if not choices:
            return
        generation, rel = self.rng.choice(choices)
        args = ("restore", rel, "--generation", str(generation), "--apply")
        if not dev.model.visible(rel):
            self.expect(self.command(index, *args), 1, "restore of a path the rules hide")
            return
        ran = self.command(index, *args)
        self.expect(ran, 0, " ".join(args))
        pre, post = ran[1], ran[2]
        old = self.fleet.versions[generation][rel]
        if rel == CONFIG:
            from campaign.model import merge_config

            merged, _ = merge_config(config_keys(pre[CONFIG]), dev.model.accepted,
                                     config_keys(old), overwrite=True)
            check_config(dev, pre, post, merged)
        else:
            assert post.get(rel) == old, f"P1: restore of {rel}@{generation} gave other bytes"
        others = {r for r in set(pre) | set(post) if r != rel and pre.get(r) != post.get(r)}
        assert not others, f"restore of {rel} changed {sorted(others)}"

    # -- quiet rounds ---------------------------------------------------------------------------

    def quiet_round(self) -> None:
        """Everyone takes the remote, publishes, then everyone pulls: all must agree (P2)."""
        from campaign.checks import check_converged

        self.log.append("quiet round")
        for index in range(len(self.devices)):
            self.pull(index, overwrite=True)
            self.step_push(index)
        for index in range(len(self.devices)):
            self.pull(index, overwrite=False)
        check_converged(self)


def _without(files: dict[str, bytes], rel: str) -> dict[str, bytes]:
    return {path: data for path, data in files.items() if path != rel}


def _digest(data: bytes | None) -> str:
    return "absent" if data is None else f"{sha(data)[:12]} ({len(data)} bytes)"

