"""The campaign with `roam forget` and `roam prune` steps between pushes and pulls (issue 23).

A forget step applies a random restic-style policy; the model then drops the generations the
record names (never HEAD: asserted). A prune step deletes what no kept generation references
(`--grace-minutes 0`: safe here because the campaign is sequential, no push is in flight)
and `roam check --read-data` must be clean right after it. The ordinary final checks then
prove P1 for every kept generation (each version back byte-exact through the store, history
and restore) and P2 convergence.
"""

from __future__ import annotations

from campaign.checks import close_repository, final_checks
from campaign.driver import Campaign


class PruningCampaign(Campaign):
    """Adds `forget` and `prune` steps; counts what they did (a run must do both)."""

    forgotten: int = 0
    prunes: int = 0

    def steps(self) -> list[tuple[int, str]]:
        return [*super().steps(), (3, "forget"), (3, "prune")]

    def policy(self) -> list[str]:
        """A random policy: keep-last, sometimes a period rule or a named generation."""
        args = ["--keep-last", str(self.rng.randint(1, 4))]
        if self.rng.random() < 0.3:
            args += ["--keep-daily", str(self.rng.randint(1, 2))]
        kept = [g for g in self.fleet.versions if g != self.fleet.head]
        if kept and self.rng.random() < 0.5:
            args += ["--keep-generation", str(self.rng.choice(kept))]
        return args

    def step_forget(self, index: int, policy: list[str] | None = None) -> None:
        args = ("forget", *(policy or self.policy()), "--apply", "--json")
        plan = self.expect(self.command(index, *args), 0, " ".join(args)).json()
        assert plan["applied"] or not plan["forget"], plan
        for row in plan["forget"]:
            generation = row["generation"]
            assert generation != self.fleet.head, f"forget dropped HEAD {generation}"
            assert generation in self.fleet.versions, f"forgot {generation} twice"
            del self.fleet.versions[generation]
            self.forgotten += 1

    def step_prune(self, index: int) -> None:
        args = ("prune", "--apply", "--grace-minutes", "0", "--json")
        self.expect(self.command(index, *args), 0, " ".join(args))
        self.prunes += 1
        self.expect(self.command(index, "check", "--read-data"), 0,
                    "check --read-data after prune")


def play_pruning(run: PruningCampaign, steps: int) -> None:
    """The ordinary campaign and its checks, with at least one forget and one prune."""
    try:
        run.setup()
        run.run(steps)
        if not run.forgotten:
            # every generation may be one a device is on, or last pushed or pulled, which no
            # policy forgets (seed 2094032397: four generations, all four so): three more
            # from one device leave the first of them to none
            for _ in range(3):
                run.pull(0, overwrite=True)
                run.step_edit(0)
                run.step_push(0)
            run.step_forget(0, ["--keep-last", "1"])
        run.step_prune(0)  # the final checks see a store pruned at least once
        final_checks(run)
    finally:
        close_repository(run)
