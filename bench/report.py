"""docs/benchmarks.md and its plot, regenerated from one harness run."""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path

from scenarios import Result

#: The page's first line; a page is never without it.
TITLE = "# Benchmarks: roam against restic\n"
#: The kept block bench/world.py owns; it goes first on the page, whoever rewrites it.
WORLD = "world"
GUIDE = """\
How to read this page: the first section is issue 22's targets from the newest one-command
harness run (`bench/world.py`: S3 and git over a latency proxy, and 100,000 files on a local
disk), replaced by each run of it; then the local-disk comparison of `bench/run.py`; then
blocks other bench scripts keep up to date. Older measurements, superseded but kept because
design choices rest on them, are in [benchmarks-history.md](benchmarks-history.md), dated.
Everything here is generated (`bench/README.md` says by which command); do not edit by hand.
"""
INTRO = """\
## On a local disk (`bench/run.py`)

Each scenario runs roam and restic side by side on the same synthetic Hermes home,
alternating which goes first, and reports the **median** wall time over the runs, the
**ratio roam/restic** (lower is better) and the peak RSS of the measured process. roam uses
its local backend, restic a local repository; both get exactly the same shared files (restic
through `--files-from-verbatim`). Before each measured command the file systems are synced,
untimed, so no command pays for what the one before it left unwritten; trees a scenario is
done with are deleted only when the run ends (deleting 20,000 files slows the next 20,000
creations on this machine's ext4). The machine is small and shared with other work, so
absolute times move between runs: read the ratios and medians, not single numbers.
"""


def _seconds(value: float) -> str:
    if math.isnan(value):
        return "–"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _ratio(result: Result) -> str:
    return "–" if math.isnan(result.ratio) else f"{result.ratio:.2f}×"


def table(results: list[Result]) -> str:
    """The results table in Markdown."""
    lines = ["| # | scenario | roam median (s) | restic median (s) | roam/restic | peak RSS "
             "roam / restic (MiB) | target | met |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in results:
        lines.append(
            f"| {r.key} | {r.title} | {_seconds(r.roam.median)} | {_seconds(r.restic.median)} "
            f"| {_ratio(r)} | {r.roam.peak_rss:.0f} / {r.restic.peak_rss:.0f} | {r.target} "
            f"| {'yes' if r.met else '**no**'} |")
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    """A bar chart of the ratios, with each scenario's ratio target as a tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in results if r.ratio_target is not None and not math.isnan(r.ratio)]
    labels = [f"{r.key}: {r.title.replace('`', '')}" for r in shown]
    ratios = [r.ratio for r in shown]
    colours = ["#3a7d44" if r.met else "#c0392b" for r in shown]
    figure, axes = plt.subplots(figsize=(9, 0.55 * len(shown) + 1.6))
    bars = axes.barh(range(len(shown)), ratios, color=colours)
    for index, r in enumerate(shown):
        if r.ratio_target is not None:
            axes.plot([r.ratio_target] * 2, [index - 0.4, index + 0.4], color="black", lw=2)
    axes.bar_label(bars, labels=[f"{v:.2f}×" for v in ratios], padding=3)
    axes.axvline(1.0, color="grey", ls="--", lw=1)
    axes.set_yticks(range(len(shown)), labels)
    axes.invert_yaxis()
    axes.set_xlabel("median wall time, roam / restic (lower is better; black tick: target)")
    axes.set_title("roam vs restic (green: target met, red: not met)")
    axes.set_xlim(0, max([*ratios, 1.0]) * 1.25)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write(path: Path, results: list[Result], *, machine: dict[str, str],
          rates: dict[str, float], restic_version: str, runs: int, load: tuple[str, str],
          weight_check: str, quick: bool, unmet: list[str],
          sections: list[str] | None = None) -> None:
    """Write the Markdown page and the PNG beside it; `sections` go after the notes."""
    image = path.with_suffix(".png")
    plot(results, image)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    old = path.read_text() if path.exists() else ""
    blocks = kept_blocks(old)
    world = [blocks.pop(WORLD), ""] if WORLD in blocks else []
    parts = [TITLE, GUIDE, *world, INTRO, f"Run: {stamp}, {runs} run(s) per scenario"
             + (" (**--quick**: small homes only)" if quick else "") + ".\n",
             "### Machine\n",
             *(f"- {key}: {value}" for key, value in machine.items()),
             f"- restic: {restic_version}",
             f"- load average at start / end: {load[0]} / {load[1]}",
             *(f"- {name}: {value:.0f} MB/s" for name, value in rates.items()),
             "", "### Results\n", table(results), "", f"![ratios]({image.name})", "",
             "### Notes\n"]
    for r in results:
        parts.extend(f"- {r.key}: {note}" for note in r.notes)
    parts.append(f"- ignored weight: {weight_check}")
    parts += sections or []
    parts += ["", "### Targets not met, and what bounds them\n"]
    parts += [f"- {line}" for line in unmet] or ["- none"]
    parts += ["\n" + text for text in blocks.values()]
    path.write_text("\n".join(parts) + "\n")


KEPT = re.compile(r"<!-- kept:([\w-]+) -->.*?<!-- /kept:\1 -->", re.S)


def kept_blocks(page: str) -> dict[str, str]:
    """Blocks bench scripts own (`<!-- kept:NAME -->`…), by name, in page order."""
    return {match.group(1): match.group(0) for match in KEPT.finditer(page)}


def put_world(page: str, block: str) -> str:
    """`page` with `block` as its world block: in place of the old one, else after the guide.

    A page without a world block gets it before its first second-level heading (the top of
    the page under the title and the guide), or at the end when it has none.
    """
    old = kept_blocks(page).get(WORLD)
    if old is not None:
        return page.replace(old, block, 1)
    if not page.startswith("# "):
        page = TITLE + "\n" + page
    at = page.find("\n## ")
    if at < 0:
        return page.rstrip("\n") + "\n\n" + block + "\n"
    return page[:at + 1] + block + "\n\n" + page[at + 1:]
