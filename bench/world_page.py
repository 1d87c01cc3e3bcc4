"""The `world` block of docs/benchmarks.md, composed from the parts bench/world.py saved.

One table per part with issue 22's target and whether it was met, the machine, the load
average at the start and end of each part, the commit, and request counts beside times.
Everything here reads the parts' JSON (`WORKDIR/<part>.json`), so the block can be composed
again from results measured earlier.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import report

#: The most requests roam may make per first push and per pull, as a multiple of restic's.
REQUEST_RATIO = 3.0
#: Peak RSS every verb at scale stays under (MiB).
RSS_MIB = 200.0
#: What an incremental push of 10 files may write besides the store (state, journal,
#: caches): kilobytes, not the home's whole state again.
WRITES_BOUND = 1 << 20
#: The scale part's targets: (ratio against restic, rows compared with restic's no-change
#: backup because roam's side has no restic counterpart of its own).
SCALE_TARGETS = {"first push": 1.0, "status, full look": 0.1, "status, remembered": 0.1,
                 "incremental push": 1.0, "pull --apply into an empty home": 1.0}
#: What bounds a network scenario when it misses (from the profiles kept in the history).
NET_BOUNDS = {
    "first push": "the push's processor work (hashing, the scan, sealing) on two cores; at "
                  "most six pack PUTs in flight",
    "status, nothing changed": "interpreter start-up and imports, the walk of the home, "
                               "one look at the remote",
    "incremental push": "the walk and the state's base read of a local push, plus a few "
                        "round trips one after another (HEAD, pack, index, snapshot, HEAD)",
    "pull --apply into an empty home": "processor time on two cores shared with the "
                                       "S3 server and the proxy: at 0 ms roam's pull used "
                                       "4.22 s against restic's 3.70 s, walls 3.67 against "
                                       "3.24 s (session 14, bench/pull_s3_ab.py --phases, "
                                       "3 alternating runs); its stage phase is 2.3 s with "
                                       "the span readers 1.6 s and the writer process 0.9 s "
                                       "of processor time, after ~0.8 s (start and boto3 "
                                       "0.25 s, manifest load, plan, journal) on one core. "
                                       "Three span readers instead of eight changed nothing "
                                       "(3.81 against 3.79 s) and no `malloc_trim` per span "
                                       "saved 3% of the processor time for 290 MiB of peak "
                                       "RSS against 205 (docs/decisions.md): the row closes "
                                       "with ~12% less processor time, not fewer waits",
}
#: The same on git, where every operation is one look and one fetch or one push.
GIT_BOUNDS = {
    "first push": "processor work on both sides, one push after the packing: roam "
                  "packs and seals into the mirror for ~4.2 s, then `git push` takes "
                  "3.2-4.1 s, paced by the receiving `index-pack` hashing every object "
                  "again, with `pack-objects` on the same two cores (bench/git_breakdown.py)."
                  " Run at once, the two halves took 0.84-0.90× restic (session 14, "
                  "bench/git_overlap.py, its block below): pushing during the packing would "
                  "close the row, but `receive-pack` takes the ref updates before the pack "
                  "and its object count in the first bytes, so that takes several pushes of "
                  "fewer than 100 objects, which a stock server unpacks loose at 3.3× the "
                  "processor time; roam keeps one push per operation",
    "status, nothing changed": "interpreter start-up, the walk of the home and one "
                               "`git ls-remote`",
    "incremental push": "one look and one `receive-pack`, plus the local push's walk and "
                        "state read",
    "init + pull --apply into an empty home": "the processor work of a whole-branch "
                                              "fetch and an install on two cores: `init` "
                                              "2.6-3.3 s, nearly all of it the fetch (the "
                                              "server's `pack-objects` reading and "
                                              "checksumming the pack, roam hashing every "
                                              "object to index it), then `pull` 2.8-3.3 s "
                                              "from the mirror (bench/git_breakdown.py). "
                                              "Run at once, the best a fetch streamed into "
                                              "the install could do, the halves took "
                                              "1.32-1.37× restic with 1.8 of the 2 cores "
                                              "busy (session 14, bench/git_overlap.py): "
                                              "the row needs less work, not more overlap, "
                                              "and the fetch's work is what git's protocol "
                                              "asks of both ends",
}
#: What bounds a scale scenario's peak RSS when it misses (measured, see the history page).
SCALE_BOUNDS = {
    "first push": "the walk's records of every file and the packs in flight (sealed and "
                  "stored ahead, 48 MiB on a local disk)",
    "status": "the walk's records and the state's digests of every file",
    "incremental push": "the walk's records and the base read from state.db",
    "pull": "~600 bytes per file of manifest entry and ~330 of install op, plus the "
            "read-ahead (the 2026-12-02 01:31 pull entry of the history page)",
}
GIT_NOTE = ("restic has no git backend: it runs its S3 backend against SeaweedFS behind a "
            "second proxy at the same RTT. On git a new device's `init` fetches the branch, "
            "so the pull row times `init` and `pull --apply` together.")


def _median(samples: list[dict[str, float]], key: str = "wall") -> float:
    return statistics.median(s[key] for s in samples) if samples else float("nan")


def _peak(samples: list[dict[str, float]]) -> float:
    return max((s["rss_mib"] for s in samples), default=float("nan"))


def _mib(value: float) -> str:
    return "–" if value != value else f"{value:.0f}"


def _seconds(value: float) -> str:
    return "–" if value != value else (f"{value:.2f}" if value < 10 else f"{value:.1f}")


def _requests(summaries: list[dict[str, Any]], key: str = "requests") -> float:
    return statistics.median(s[key] for s in summaries) if summaries else float("nan")


def net_met(row: dict[str, Any]) -> tuple[bool, float, float, float]:
    """(met, ratio, roam requests, restic requests) of one network cell."""
    ratio = _median(row["roam"]) / _median(row["restic"])
    ours, theirs = _requests(row["roam_requests"]), _requests(row["restic_requests"])
    met = ratio <= row["ratio_target"]
    if row["scenario"].startswith(("first push", "pull", "init + pull")):
        met = met and ours <= REQUEST_RATIO * theirs
    return met, ratio, ours, theirs


def net_table(rows: list[dict[str, Any]]) -> list[str]:
    """A network part's cells, one line each, sorted by scenario then RTT."""
    lines = ["| scenario | RTT | roam (s) | restic (s) | roam/restic | target | requests roam "
             "/ restic | roam waves | peak RSS roam / restic (MiB) | met |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    order = {name: index for index, name in enumerate(dict.fromkeys(r["key"] for r in rows))}
    for row in sorted(rows, key=lambda r: (order[r["key"]], r["rtt_ms"])):
        met, ratio, ours, theirs = net_met(row)
        target = row["target"]
        if row["scenario"].startswith(("first push", "pull", "init + pull")):
            target += f"; requests ≤ {REQUEST_RATIO:g}× restic's"
        lines.append(
            f"| {row['scenario']} | {row['rtt_ms']} ms | {_seconds(_median(row['roam']))} | "
            f"{_seconds(_median(row['restic']))} | {ratio:.2f}× | {target} | {ours:.0f} / "
            f"{theirs:.0f} | {_requests(row['roam_requests'], 'waves'):.0f} | "
            f"{_peak(row['roam']):.0f} / {_peak(row['restic']):.0f} | "
            f"{'yes' if met else '**no**'} |")
    return lines


def scale_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scale rows with their restic comparison, ratio, target and verdict filled in."""
    backup = next((r["restic"] for r in rows if r["scenario"].startswith("status, full")), [])
    cells = []
    for row in rows:
        name = row["scenario"]
        base = next(t for key, t in SCALE_TARGETS.items() if name.startswith(key))
        theirs = row["restic"] or (backup if name.startswith("status") else [])
        ratio = _median(row["roam"]) / _median(theirs) if theirs else float("nan")
        peak = _peak(row["roam"])
        met = ratio <= base and peak <= RSS_MIB
        target = f"≤ {base:.1f}× restic, ≤ {RSS_MIB:.0f} MiB"
        writes = row.get("writes") or {}
        besides = [w - g for w, g in zip(writes.get("written", []),
                                         writes.get("store_growth", []), strict=False)]
        if besides:
            target += ", ≤ 1 MiB written besides the store"
            met = met and max(besides) <= WRITES_BOUND
        cells.append({**row, "theirs": theirs, "ratio": ratio, "peak": peak, "met": met,
                      "target": target, "besides": besides})
    return cells


def scale_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | roam (s) | restic (s) | roam/restic | peak RSS roam / restic (MiB) "
             "| target | met |", "|---|---:|---:|---:|---:|---|---|"]
    for cell in scale_cells(rows):
        ratio = "–" if cell["ratio"] != cell["ratio"] else f"{cell['ratio']:.2f}×"
        lines.append(
            f"| {cell['scenario']} | {_seconds(_median(cell['roam']))} | "
            f"{_seconds(_median(cell['theirs']))} | {ratio} | {_mib(cell['peak'])} / "
            f"{_mib(_peak(cell['restic']))} | {cell['target']} | "
            f"{'yes' if cell['met'] else '**no**'} |")
    return lines


def scale_notes(rows: list[dict[str, Any]]) -> list[str]:
    notes = ["- the remembered status has no restic run of its own: it is compared with the "
             "same no-change `restic backup` as the full look."]
    for cell in scale_cells(rows):
        if cell["peak"] > RSS_MIB:
            why = next(text for key, text in SCALE_BOUNDS.items()
                       if cell["scenario"].startswith(key))
            notes.append(f"- missed, {cell['scenario']}: peak RSS {cell['peak']:.0f} MiB; "
                         f"bounded by {why}.")
        if not cell["besides"]:
            continue
        writes = cell["writes"]
        notes.append(
            f"- {cell['scenario']}: the push process wrote "
            f"{', '.join(f'{w / 1024:.0f}' for w in writes['written'])} KiB (`wchar`), of "
            f"which the store grew {', '.join(f'{g / 1024:.0f}' for g in writes['store_growth'])}"
            f" KiB: {', '.join(f'{b / 1024:.0f}' for b in cell['besides'])} KiB of local "
            f"state, journal and caches, against a `roam/` folder of "
            f"{max(writes['roam_folder']) / 2**20:.0f} MiB.")
    return notes


def _header(info: dict[str, Any]) -> str:
    load = info["load"]
    costs = []
    if info.get("cpu_seconds") is not None:
        costs.append(f"{info['cpu_seconds'] / 60:.1f} min of processor time")
    spent = f" ({', '.join(costs)})" if costs else ""
    return (f"`{info['command']}` at commit {info['commit']}, {info['started']}, "
            f"{info['runs']} pair(s) per cell, {info['seconds'] / 60:.1f} min{spent}; load "
            f"average {load[0]} at the start, {load[1]} at the end.")


def _verdict(cells: list[bool]) -> str:
    return f"{sum(cells)} of {len(cells)} targets met"


def part_section(part: str, info: dict[str, Any]) -> list[str]:
    """One part's heading, provenance, table and notes."""
    rows = info["rows"]
    if part == "scale":
        cells = [c["met"] for c in scale_cells(rows)]
        return [f"### Scale: {info['files']:,} files of 5 KiB mean on a local disk "
                f"({_verdict(cells)})", "", _header(info), "", *scale_table(rows), "",
                *scale_notes(rows)]
    verdicts = [net_met(row)[0] for row in rows]
    title = ("S3: SeaweedFS" if part == "s3" else "git: smart HTTP") + \
        f" behind a latency proxy, `{info['home']}` home ({_verdict(verdicts)})"
    lines = [f"### {title}", "", _header(info) + (" " + GIT_NOTE if part == "git" else ""),
             "", *net_table(rows), ""]
    if part == "git":
        lines += ["roam's git requests per run by class (GET info/refs = `advertise`, "
                  "upload-pack POSTs = `ls-refs` / `fetch`, `receive-pack` = the push):", ""]
        classes: dict[str, dict[str, list[int]]] = {}
        for row in rows:
            if row["notes"]:
                classes.setdefault(row["scenario"], {}).setdefault(
                    row["notes"][-1], []).append(row["rtt_ms"])
        for name, seen in classes.items():
            lines += [f"- {name}: {note} (RTT {', '.join(map(str, rtts))} ms)"
                      for note, rtts in seen.items()]
        lines += ["", "On git the peak RSS is the largest of roam's and of the git processes "
                  "it waited for (`git fetch`'s `index-pack` among them).", ""]
    bounds = GIT_BOUNDS if part == "git" else NET_BOUNDS
    for name in dict.fromkeys(row["scenario"] for row in rows if not net_met(row)[0]):
        why = next((text for key, text in bounds.items() if name.startswith(key)),
                   "see the history page")
        lines.append(f"- missed, {name}: bounded by {why}.")
    return lines


def block(parts: dict[str, dict[str, Any]]) -> str:
    """The whole `world` block: what was run where, then one section per part."""
    machine = next(iter(parts.values()))["machine"]
    restic = next(iter(parts.values()))["restic"]
    lines = [f"<!-- kept:{report.WORLD} -->", "",
             "## Issue 22's targets in one harness run (`bench/world.py`)", "",
             "roam against restic, alternating who goes first, medians over the pairs; "
             "S3 and git through `bench/netproxy.py` (half the round-trip time per direction, "
             "one extra round trip per new connection, every HTTP request counted; *waves* are "
             "the round trips roam waited for one after another). Read the ratios and the "
             "request counts; on a loaded machine the seconds are inflated. The raw samples "
             "are the JSON files the parts saved.", "",
             f"Machine: {machine['cpu']}, {machine['memory']}, kernel {machine['kernel']}, "
             f"Python {machine['python']}, {machine['filesystem']}; {restic}.", ""]
    for part in ("s3", "git", "scale"):
        if part in parts:
            lines += [*part_section(part, parts[part]), ""]
    lines.append(f"<!-- /kept:{report.WORLD} -->")
    return "\n".join(lines)


def write(page: Path, text: str) -> None:
    """Put the block at the top of `page`, replacing the one there."""
    old = page.read_text() if page.exists() else report.TITLE
    page.write_text(report.put_world(old, text))
