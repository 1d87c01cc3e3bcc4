"""What the prune race did, kept so that a failure is diagnosable from the CI log alone.

Each pusher appends a line per pass (time, pull and push exit codes, their last output line,
the device's floor afterwards, and the tail of any error); the test appends a line per sweep
(HEAD's generation as forget saw it, what it forgot, what the prune deleted and repacked, or
the error it raised). On failure `report` prints the seed, that interleaving in time order,
every device's floor and state, and the store's chain of generations (who pushed each).
"""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

from campaign.harness import Home
from helpers import session_of

from roam_core.engine.forget import ForgetPlan
from roam_core.engine.history import generations
from roam_core.engine.prune import PruneResult
from roam_core.engine.state import load_state


class RaceLog:
    """The race's timeline: one file per pusher and one for the sweeps, below `folder`."""

    def __init__(self, folder: Path, seed: int) -> None:
        self.folder = folder
        self.seed = seed
        folder.mkdir(parents=True, exist_ok=True)
        self.sweeps = folder / "sweeps.log"

    def pusher(self, home: Home) -> Path:
        return self.folder / f"{home.name}.log"

    def pass_script(self, home: Home, pull: str, push: str) -> str:
        """Shell that runs `pull` then `push` and logs the pass (the loop counts in `$n`).

        The line is stamped when the pass ends (it says when it began): a push's HEAD swap
        lies between the two.
        """
        log, out, err = (shlex.quote(str(self.folder / f"{home.name}.{what}"))
                         for what in ("log", "out", "err"))
        floor = shlex.quote(str(home.root / "roam" / "floor.json"))
        return (f" s=$(date +%s.%N); {pull} >{out} 2>{err}; p=$?; pl=$(tail -n 1 {out});"
                f" {push} >{out} 2>>{err}; q=$?; ql=$(tail -n 1 {out});"
                f" echo \"$(date +%s.%N) {home.name} pass $n (from $s): pull $p ($pl) push $q ($ql)"
                f" floor $(grep -o '\"generation\": *[0-9]*' {floor} 2>/dev/null"
                f" | tr -dc '0-9 \\n' | tr '\\n' ' ')\" >> {log};"
                f" [ -s {err} ] && tail -n 3 {err} | sed 's/^/    /' >> {log};")

    def note(self, text: str) -> None:
        """A line of its own in the timeline (the budget the race ran with)."""
        with self.sweeps.open("a") as handle:
            handle.write(f"{time.time():.6f} {text}\n")

    def sweep(self, number: int, plan: ForgetPlan | None, swept: PruneResult | None,
              error: BaseException | None = None) -> None:
        """One sweep's line: what forget kept and forgot, what prune did, or what it raised."""
        parts = [f"{time.time():.6f} sweep {number}:"]
        if plan is not None:
            parts.append(f"kept {_generations(plan.keep)} forgot {_generations(plan.forget)}")
        if swept is not None:
            parts.append(f"deleted {dict(swept.deleted)} repacked {swept.repacked}")
        if error is not None:
            parts.append(f"raised {type(error).__name__}: {error}")
        with self.sweeps.open("a") as handle:
            handle.write(" ".join(parts) + "\n")

    def report(self, homes: list[Home]) -> str:
        """Seed, the interleaving (every pass and sweep by time), floors, states, the chain."""
        lines = [f"prune race diagnosis (seed {self.seed}; logs in {self.folder})",
                 "-- interleaving, by time --", *self._timeline(homes), "-- devices --"]
        for home in homes:
            lines.append(f"{home.name}: {_device(home)}")
        lines.append("-- the store's generations (newest first) --")
        lines.extend(_chain(homes[0]))
        return "\n".join(lines)

    def _timeline(self, homes: list[Home]) -> list[str]:
        entries: list[tuple[float, list[str]]] = []
        for path in (self.sweeps, *(self.pusher(home) for home in homes)):
            if not path.exists():
                continue
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith(" ") and entries:
                    entries[-1][1].append(line)  # an error's tail, under its pass
                    continue
                stamp = line.split(" ", 1)[0]
                entries.append((float(stamp) if _is_time(stamp) else 0.0, [line]))
        entries.sort(key=lambda entry: entry[0])
        return _runs_folded([line for _stamp, block in entries for line in block])


def _runs_folded(lines: list[str]) -> list[str]:
    """Back-to-back sweeps that found the same are one line (`sweeps 3-51: ...`)."""
    folded: list[str] = []
    run: tuple[str, str, str, str] | None = None  # first stamp, first and last number, what
    for line in [*lines, ""]:
        found = _SWEEP.match(line)
        if found and run is not None and found["what"] == run[3]:
            run = (run[0], run[1], found["number"], run[3])
            continue
        if run is not None:
            numbers = f" {run[1]}" if run[1] == run[2] else f"s {run[1]}-{run[2]}"
            folded.append(f"{run[0]} sweep{numbers}: {run[3]}")
        run = (found["stamp"], found["number"], found["number"], found["what"]) if found \
            else None
        if not found and line:
            folded.append(line)
    return folded


_SWEEP = re.compile(r"(?P<stamp>\S+) sweep (?P<number>\d+): (?P<what>.*)")


def _generations(rows: list[dict[str, Any]]) -> list[Any]:
    return [row.get("generation") for row in rows]


def _is_time(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _device(home: Home) -> str:
    floor = home.root / "roam" / "floor.json"
    try:
        floors = json.dumps(json.loads(floor.read_text()), sort_keys=True)
    except (OSError, ValueError) as error:
        floors = f"unreadable ({error})"
    try:
        state = load_state(home.root / "roam")
        held = "none" if state is None else (
            f"generation {state.generation} last_push {state.last_push} "
            f"last_pull {state.last_pull}")
    except Exception as error:  # a diagnosis reports, it does not fail again
        held = f"unreadable ({error})"
    return f"floor {floors}; state {held}"


def _chain(home: Home) -> list[str]:
    try:
        with session_of(home) as session:
            return [f"generation {gen.number}: {gen.snapshot.device} at {gen.snapshot.created}"
                    for gen in generations(session)]
    except Exception as error:  # a diagnosis reports, it does not fail again
        return [f"unreadable: {type(error).__name__}: {error}"]
