"""Round trips, not bytes, are the cost on a real network: count them.

A home of T trees and P packs goes through moto behind bench/netproxy.py, which logs every
HTTP request. Counts are stable where times are not, so these tests assert counts and
`waves` (how often the client waited with nothing else in flight: the round trips it paid
one after another). Loading trees or blobs one at a time again makes them fail.
"""

from __future__ import annotations

import base64
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key

from support.s3_servers import S3Server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import LatencyProxy, Request, latency_proxy, summarize

pytest_plugins = ("support.s3_servers",)

#: One way, per direction: small enough to keep the test quick, large enough that requests
#: sent together overlap and requests sent one after another do not.
ONE_WAY = 0.004
#: One way for the incremental push, whose waves count requests sent together.
SLOW_ONE_WAY = 0.1
#: Skill folders (each with a nested folder), so a home of about 2 × SKILLS trees.
SKILLS = 36
#: Files big enough that the test's small packs hold about one each.
BIG_FILES = 8


def _kind(request: Request) -> str:
    """trees / packs / index / snapshots / refs / list, from the request target."""
    path, _, query = request.target.partition("?")
    if "list-type" in query or query.startswith("uploads") or request.method == "POST":
        return "list" if "list-type" in query else "multipart"
    parts = path.split("/")
    if "objects" in parts:
        return parts[parts.index("objects") + 1]
    return "refs" if "refs" in parts else "other"


def _count(requests: list[Request], method: str, kind: str) -> int:
    return sum(1 for r in requests if r.method == method and _kind(r) == kind)


@pytest.fixture
def proxy(moto_s3: S3Server) -> Iterator[LatencyProxy]:
    with latency_proxy(int(moto_s3.endpoint_url.rpartition(":")[2]), ONE_WAY) as running:
        yield running


@pytest.fixture
def fleet(moto_s3: S3Server, proxy: LatencyProxy, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> tuple[Home, Home]:
    """Two devices on a fresh bucket behind the proxy; a test parametrized with
    `store_format` founds the store in that format (the default is the current one)."""
    callspec = getattr(request.node, "callspec", None)
    store_format = callspec.params.get("store_format") if callspec else None
    # small packs, so a small home spreads over several
    monkeypatch.setattr("roam_core.store.packer.PACK_TARGET", 64 * 1024)
    settings = moto_s3.settings(moto_s3.fresh_bucket())
    settings["s3_endpoint_url"] = proxy.url
    store = Store("s3", settings, moto_s3.env(), key=new_key())
    runner = Runner()
    desk = Home(tmp_path / "desk", "desk", store, runner)
    laptop = Home(tmp_path / "laptop", "laptop", store, runner)
    rng = random.Random(22)
    for number in range(SKILLS):
        skill = f"skills/group{number % 4}/skill{number}"
        desk.write(f"{skill}/SKILL.md", f"# skill {number}\n")
        desk.write(f"{skill}/references/notes.md", f"notes {number}\n" * 20)
    for number in range(BIG_FILES):
        desk.write(f"memories/big{number}.md", base64.b64encode(rng.randbytes(48_000)))
    desk.write("memories/MEMORY.md", "first\n")
    founding = ("--format", str(store_format)) if store_format else ()
    assert desk.roam("init", "--create-remote", *founding).code == 0
    return desk, laptop


def _stored(moto_s3: S3Server, home: Home, kind: str) -> int:
    bucket = home.store.settings["s3_bucket"]
    client = moto_s3.client()
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                             Prefix=f"roam/objects/{kind}/")
    return sum(len(page.get("Contents", ())) for page in pages)


def test_first_push_pull_status_and_incremental_push_count_requests(
        fleet: tuple[Home, Home], proxy: LatencyProxy, moto_s3: S3Server) -> None:
    desk, laptop = fleet

    before = _stored(moto_s3, desk, "packs")  # init's empty generation: one tree pack
    proxy.reset()
    assert desk.roam("push").code == 0
    pushed = proxy.requests()
    packs = _stored(moto_s3, desk, "packs") - before
    assert _stored(moto_s3, desk, "trees") == 0, "format 2 stores no tree on its own"
    assert packs >= BIG_FILES // 2
    # every object once, create-once writes without an existence check or a multipart dance
    assert _count(pushed, "PUT", "packs") == packs
    assert _count(pushed, "PUT", "index") == packs
    assert not [r for r in pushed if _kind(r) == "multipart"]
    # no look before a create-once write: the only read of a pack is the one check that the
    # tree pack holding the base generation's trees is still stored (a push never relies on
    # a lost pack, trees included)
    looks = [r for r in pushed if r.method == "HEAD" or (r.method == "GET" and _kind(r) in (
        "packs", "index", "trees"))]
    assert len(looks) <= 1 and not [r for r in looks if _kind(r) != "packs"], looks
    # a PUT that waits for `100 Continue` pays a round trip more
    assert not [r.target for r in pushed if r.expect_continue]
    # the home's 2 × SKILLS + a few trees go in one tree pack, not one PUT each: the whole
    # push is its packs, their indexes, the snapshot, HEAD and a few lists and reads
    # (and the prune lease read: marks a push must honour)
    assert len(pushed) <= 2 * packs + 10, summarize(pushed)

    assert laptop.roam("init").code == 0
    proxy.reset()
    assert laptop.roam("pull", "--apply").code == 0
    pulled = proxy.requests()
    assert laptop.files().keys() >= {"memories/MEMORY.md", "memories/big0.md"}
    # trees a few ranged reads of their tree packs, level by level; blobs one ranged read
    # per pack span, not one per file; every index once, all at the same time
    assert _count(pulled, "GET", "trees") == 0
    assert _count(pulled, "GET", "index") == packs + 1
    assert _count(pulled, "GET", "packs") <= 2 * packs + 6, summarize(pulled)
    assert len(pulled) <= 3 * packs + 12, summarize(pulled)
    # the waves are the home's depth and a few, not one per folder or per file
    assert summarize(pulled).waves <= 14, summarize(pulled)

    proxy.reset()
    status = laptop.roam("status")
    assert status.code == 0, status.err
    assert len(proxy.requests()) == 1

    desk.write("memories/MEMORY.md", "first\n§\nsecond\n")
    desk.write("skills/group1/skill5/SKILL.md", "# changed\n")
    proxy.reset()
    # a longer round trip here: whether two requests overlap must not hang on a few
    # milliseconds of a busy machine's scheduling
    proxy.one_way = SLOW_ONE_WAY
    assert desk.roam("push").code == 0
    proxy.one_way = ONE_WAY
    incremental = proxy.requests()
    # the indexes this device wrote itself are known: none is read back; nor any tree
    assert _count(incremental, "GET", "index") == 0
    assert _count(incremental, "GET", "packs") <= 1  # the base tree pack's presence probe
    # nor the snapshot it wrote itself, nor the index listing twice (once for its blobs,
    # once for its trees)
    assert _count(incremental, "GET", "snapshots") == 0
    assert len([r for r in incremental if _kind(r) == "list" and "index" in r.target]) == 1
    # a data pack and a tree pack with their indexes, the snapshot, HEAD, the lease, the
    # index and void listings and one presence probe
    assert _count(incremental, "PUT", "packs") == 2
    assert len(incremental) <= 11, [(r.method, r.target) for r in incremental]
    # waited for one after another: HEAD with the reads that do not need it; the probe;
    # both packs at once, then both indexes; the snapshot; HEAD. The tree pack goes beside
    # the data pack only when the trees are built before that PUT ends (local timing: a CI
    # run saw them one after the other, 7 waves); reads one after another again make 9
    assert summarize(incremental).waves <= 7, [(r.method, _kind(r), round(r.started, 3),
                                                round(r.ended or 0, 3)) for r in incremental]


def test_a_whole_pack_is_one_put_and_a_large_create_once_write_never_looks_first(
        moto_s3: S3Server, proxy: LatencyProxy) -> None:
    from backend_s3_helpers import server_backend

    from roam_backend_s3.backend import S3Backend
    from roam_core.errors import ObjectExists
    from roam_core.store.objects import PACK_TARGET

    bucket = moto_s3.fresh_bucket()
    backend = server_backend(moto_s3, bucket, s3_endpoint_url=proxy.url)
    assert isinstance(backend, S3Backend)
    # a pack is a little over its target when its last blob overshoots
    pack = random.Random(1).randbytes(PACK_TARGET + 300_000)
    proxy.reset()
    backend.put_new("packs/aa/full", pack)
    assert [(r.method, _kind(r)) for r in proxy.requests()] == [("PUT", "packs")]

    # past the threshold, parts go up; the conditional completion refuses a taken key
    backend.multipart_threshold, backend.part_size = 6 * 1024 * 1024, 5 * 1024 * 1024
    proxy.reset()
    with pytest.raises(ObjectExists):
        backend.put_new("packs/aa/full", pack[: 7 * 1024 * 1024])
    assert not [r for r in proxy.requests() if r.method in ("GET", "HEAD")]
    assert backend.get("packs/aa/full") == pack


def test_check_read_data_reads_blobs_per_pack_span(fleet: tuple[Home, Home],
                                                   proxy: LatencyProxy,
                                                   moto_s3: S3Server) -> None:
    desk, _laptop = fleet
    assert desk.roam("push").code == 0
    packs = _stored(moto_s3, desk, "packs")
    proxy.reset()
    checked = desk.roam("check", "--read-data")
    assert checked.code == 0, checked.out + checked.err
    assert _count(proxy.requests(), "GET", "packs") <= 2 * packs


def test_a_status_on_s3_imports_botocore_only(fleet: tuple[Home, Home]) -> None:
    """boto3 and its transfer manager cost more to import than the one HEAD read a status
    makes; roam needs only botocore's client."""
    desk, _laptop = fleet
    status = desk.run("status", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert status.returncode == 0, status.stderr[-2000:]
    imported = {line.rpartition("|")[2].strip() for line in status.stderr.splitlines()
                if line.startswith("import time:")}
    assert "botocore.client" in imported  # the measurement does see the backend's imports
    assert not {name for name in imported if name.split(".")[0] in ("boto3", "s3transfer")}
