"""Issue 23: `roam stats` on S3 reads listings, snapshots, trees and indexes — never a pack.

A device that never read the store (a fresh cache) pays each tree, snapshot and index once,
trees level by level in parallel; asked again, everything but HEAD and the listings comes
from its cache.
"""

from __future__ import annotations

import pytest
from campaign.harness import Home
from test_s3_requests import (  # noqa: F401
    SKILLS,
    LatencyProxy,
    _count,
    _stored,
    fleet,
    proxy,
    summarize,
)

from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)


# its bounds count format 1's tree objects; a format-2 store reads its trees from tree packs
@pytest.mark.parametrize("store_format", [1])
def test_stats_requests_are_bounded(store_format: int,  # read by `fleet`
                                    fleet: tuple[Home, Home], proxy: LatencyProxy,  # noqa: F811
                                    moto_s3: S3Server) -> None:
    desk, laptop = fleet
    assert desk.roam("push").code == 0
    for version in range(3):
        desk.write("memories/MEMORY.md", f"version {version}\n")
        desk.write(f"skills/group1/skill{version}/SKILL.md", f"# changed {version}\n")
        assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0
    trees, snapshots, indexes = (_stored(moto_s3, desk, kind)
                                 for kind in ("trees", "snapshots", "index"))
    assert trees >= 2 * SKILLS

    proxy.reset()
    stats = laptop.roam("stats", "--json")
    assert stats.code == 0, stats.err
    assert stats.json()["generations"] == 5
    requests = proxy.requests()
    summary = summarize(requests)
    assert _count(requests, "GET", "packs") == 0 and _count(requests, "HEAD", "packs") == 0
    assert _count(requests, "GET", "trees") <= trees
    assert _count(requests, "GET", "snapshots") <= snapshots
    assert _count(requests, "GET", "index") <= indexes
    assert len(requests) <= trees + snapshots + indexes + 10, summary
    # trees by level, all generations' at once: the depth and the snapshot chain, not a wait
    # per tree
    assert summary.waves <= snapshots + 20, summary
    print(f"stats, fresh cache: {trees} trees, {snapshots} snapshots, {indexes} indexes: "
          f"{summary}")

    proxy.reset()
    again = laptop.roam("stats", "--json")
    assert again.code == 0 and again.json() == stats.json()
    requests = proxy.requests()
    assert not [r for r in requests if r.method == "GET" and "/objects/" in r.target
                and "list-type" not in r.target], [(r.method, r.target) for r in requests]
    # HEAD and one listing per kind of object (forget records joined them): a fixed
    # number, whatever the store holds
    assert len(requests) <= 10, [(r.method, r.target) for r in requests]
    print(f"stats, warm cache: {summarize(requests)}")
