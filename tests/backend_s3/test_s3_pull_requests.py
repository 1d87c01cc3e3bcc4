"""Issue 22: a pull's requests grow with the store's packs, not with its folders or files.

A home of N folders (some nested deep) and P packs goes through moto behind
bench/netproxy.py. A format 2 pull reads HEAD, the snapshot, the listings, every index once
(all at the same time), each tree pack once (whole, at the first level that touches it, not
once per level) and each data pack once (one ranged read per pack, not per blob or per
8 MiB): O(P + N / trees per pack) requests, in a number of waves that does not grow with the
home's depth.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from campaign.harness import Home
from campaign.storeview import generations, manifest_of, open_repository
from test_s3_requests import (  # noqa: F401
    ONE_WAY,
    LatencyProxy,
    Request,
    _count,
    fleet,
    proxy,
    summarize,
)

from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)

#: Folders nested this deep under the fleet's home: a pull reading trees level by level
#: would read their tree pack once per level.
DEPTH = 12
#: Small files spread over that nesting, packed many to a pack: read per blob, a pull would
#: make a request for each.
NOTES = 60


def _pack_of(target: str) -> str:
    """The store key `packs/<2 hex>/<sha>` a request's target names."""
    path = target.partition("?")[0]
    return "packs/" + path.split("/packs/", 1)[1]


def _packs(home: Home, scratch: Path) -> tuple[int, set[str], set[str]]:
    """The store's indexes (how many), its tree packs and its data packs."""
    with open_repository(home.store, scratch / "view") as repo:
        entries = repo.index_entries()
    return (len(entries),
            {str(ref[1]) for _blobs, trees in entries.values() for ref in trees},
            {str(ref[1]) for blobs, _trees in entries.values() for ref in blobs})


def _pack_reads(requests: list[Request]) -> Counter[str]:
    """GETs per pack key."""
    return Counter(_pack_of(r.target) for r in requests if r.method == "GET"
                   and "/packs/" in r.target)


def test_a_pull_reads_each_pack_once_whatever_the_home_s_depth(
        fleet: tuple[Home, Home], proxy: LatencyProxy, moto_s3: S3Server,  # noqa: F811
        tmp_path: Path) -> None:
    desk, laptop = fleet
    deep = "/".join(f"level{n}" for n in range(DEPTH))
    for number in range(NOTES):
        desk.write(f"skills/deep/{deep}/branch{number % 6}/note{number}.md",
                   f"note {number}\n" * 30)
    assert desk.roam("push").code == 0
    indexes, tree_packs, data_packs = _packs(desk, tmp_path)
    folders = DEPTH + 6 + 2 * 36

    assert laptop.roam("init").code == 0
    proxy.reset()
    assert laptop.roam("pull", "--apply").code == 0
    pulled = proxy.requests()
    summary = summarize(pulled)
    files = laptop.files()
    assert files[f"skills/deep/{deep}/branch5/note59.md"] == b"note 59\n" * 30

    reads = _pack_reads(pulled)
    # every tree of the generation from one read of its tree pack, not one read per level
    assert all(reads[pack] <= 1 for pack in tree_packs), \
        {pack: reads[pack] for pack in tree_packs}
    # a data pack is one ranged read; a few more are the planner's own reads of files it
    # merges (memories, config), one blob each
    assert sum(reads[pack] for pack in data_packs) <= len(data_packs) + 4, reads
    assert set(reads) <= tree_packs | data_packs
    # the whole pull: HEAD, the snapshot, two listings, every index, the packs and a few
    # more; never the folders (DEPTH + …) nor the files (NOTES + …)
    assert _count(pulled, "GET", "index") == indexes
    assert len(pulled) <= indexes + len(tree_packs) + len(data_packs) + 12, summary
    assert len(pulled) < folders + NOTES, summary
    # waits one after another: HEAD, snapshot, listings, indexes, trees, data; not the depth
    assert summary.waves <= 12, summary


def test_stats_on_format_2_reads_each_tree_pack_once_and_no_data_pack(
        fleet: tuple[Home, Home], proxy: LatencyProxy, moto_s3: S3Server,  # noqa: F811
        tmp_path: Path) -> None:
    desk, laptop = fleet
    deep = "/".join(f"level{n}" for n in range(DEPTH))
    desk.write(f"skills/deep/{deep}/note.md", "deep\n")
    assert desk.roam("push").code == 0
    for version in range(3):
        desk.write("memories/MEMORY.md", f"version {version}\n")
        desk.write(f"skills/deep/{deep}/note.md", f"deep {version}\n")
        assert desk.roam("push").code == 0
    indexes, tree_packs, data_packs = _packs(desk, tmp_path)
    assert len(tree_packs) >= 5  # init's and each push's
    assert laptop.roam("init").code == 0

    proxy.reset()
    stats = laptop.roam("stats", "--json")
    requests = proxy.requests()
    assert stats.code == 0 and stats.json()["generations"] == 5, stats.err
    summary = summarize(requests)
    reads = _pack_reads(requests)
    assert not set(reads) & data_packs, reads
    # each generation's trees from its tree packs, each read once, not once per level
    assert all(count == 1 for count in reads.values()), reads
    assert _count(requests, "GET", "index") <= indexes
    assert _count(requests, "GET", "snapshots") <= 5
    assert len(requests) <= indexes + len(tree_packs) + 5 + 10, summary
    # the snapshot chain and a few: not the depth times the generations
    assert summary.waves <= 5 + 12, summary


def test_a_path_s_history_reads_a_tree_shared_by_generations_once(
        fleet: tuple[Home, Home], proxy: LatencyProxy) -> None:  # noqa: F811
    desk, laptop = fleet
    deep = "/".join(f"level{n}" for n in range(DEPTH))
    note = f"skills/deep/{deep}/note.md"
    desk.write(note, "deep\n")
    assert desk.roam("push").code == 0
    generations = 4
    for version in range(generations):  # the note's folders stay as they were
        desk.write("memories/MEMORY.md", f"version {version}\n")
        assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0

    proxy.reset()
    history = laptop.roam("history", note, "--json")
    requests = proxy.requests()
    assert history.code == 0, history.err
    assert len(history.json()) == 1, history.out  # added once, never changed
    # each generation's root, then the path's trees below it once for all generations
    # (one read per generation and per level would be about generations × DEPTH)
    reads = sum(_pack_reads(requests).values())
    assert reads <= (generations + 2) + DEPTH + 4, summarize(requests)



#: One way for the waves test: whether two requests overlap must not hang on a few
#: milliseconds of a busy machine's scheduling.
SLOW_ONE_WAY = 0.05
#: The remote files a first pull's plan reads to merge them before it installs anything
#: (those the store holds): the plugin inventory, the configuration, the cron jobs.
MERGED = ("roam/installed-plugins.json", "config.yaml", "cron/jobs.json")


def _merge_ranges(home: Home, scratch: Path) -> set[tuple[str, str]]:
    """(pack, Range header) of each blob of the files the plan merges."""
    with open_repository(home.store, scratch / "merged") as repo:
        _snapshot_id, snapshot = max(generations(repo).items())[1]
        manifest = manifest_of(repo, snapshot)
    return {(ref[1], f"bytes={ref[2]}-{ref[2] + ref[3] - 1}")
            for rel in MERGED if rel in manifest for ref in manifest[rel].blobs}


def _waves_before(requests: list[Request], first: float) -> list[list[str]]:
    """The waves of the requests started before `first`: what each request read."""
    waves: list[list[str]] = []
    busy_until = float("-inf")
    for request in sorted(requests, key=lambda r: r.started):
        if request.started >= first:
            break
        if request.started >= busy_until:
            waves.append([])
        busy_until = max(busy_until, request.ended or request.started)
        path, _, query = request.target.partition("?")
        waves[-1].append(f"{request.method} {path[-40:]}{'?' + query[:40] if query else ''}")
    return waves


def test_a_first_pull_waits_four_round_trips_before_its_files_stream(
        fleet: tuple[Home, Home], proxy: LatencyProxy, tmp_path: Path) -> None:  # noqa: F811
    """HEAD beside the index listing; the indexes beside the void records; the tree pack;
    the files the plan merges, all at once. Then the files stream. Any of these one after
    another again costs a full round trip before the first file's bytes are asked for."""
    desk, laptop = fleet
    desk.write("cron/jobs.json", '{"jobs": []}\n')
    assert desk.roam("push").code == 0
    _indexes, _tree_packs, data_packs = _packs(desk, tmp_path)
    merged = _merge_ranges(desk, tmp_path)
    assert len(merged) >= 2  # two reads that could wait one after the other
    assert laptop.roam("init").code == 0
    proxy.reset()
    proxy.one_way = SLOW_ONE_WAY
    try:
        assert laptop.roam("pull", "--apply").code == 0
    finally:
        proxy.one_way = ONE_WAY
    pulled = proxy.requests()
    data_reads = [r for r in pulled if r.method == "GET" and "/packs/" in r.target
                  and _pack_of(r.target) in data_packs]
    plan_reads = [r for r in data_reads if (_pack_of(r.target), r.range) in merged]
    assert len(plan_reads) == len(merged), (merged, [(r.target, r.range) for r in data_reads])
    first_stream = min(r.started for r in data_reads if r not in plan_reads)
    # the plan's reads wait for the trees, the stream for the plan: both come last
    assert max(r.started for r in plan_reads) < first_stream
    waves = _waves_before(pulled, first_stream)
    assert len(waves) <= 4, waves
