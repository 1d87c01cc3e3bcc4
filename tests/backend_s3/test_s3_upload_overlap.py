"""A first push keeps several pack uploads in flight while packing goes on (issue 22).

On a remote store each pack costs two round trips (the pack, then its index). When the
threads that seal packs also store them, at most as many PUTs travel as there are sealers
(two), and a first push at 100 ms RTT waits on the network. moto behind bench/netproxy.py
logs every request with when it started and ended at the client; the test counts the most
pack PUTs in flight at once, not times. Storing packs one at a time (or in the sealers
again) makes it fail.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key

from support.s3_servers import S3Server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import LatencyProxy, Request, latency_proxy

pytest_plugins = ("support.s3_servers",)

#: One way, per direction: long beside sealing a small pack, so PUTs handed over together
#: overlap however busy the machine is.
ONE_WAY = 0.05
#: The test's pack target: each incompressible file below fills a pack of its own.
PACK_TARGET = 64 * 1024
FILES = 12
#: Data packs are near the pack target; the home's one tree pack and the indexes are small.
DATA_PACK = PACK_TARGET // 2


@pytest.fixture
def proxy(moto_s3: S3Server) -> Iterator[LatencyProxy]:
    with latency_proxy(int(moto_s3.endpoint_url.rpartition(":")[2]), ONE_WAY) as running:
        yield running


def _peak(requests: list[Request]) -> int:
    """The most of `requests` in flight at once (an end before a start at one instant)."""
    events = sorted([(r.started, 1) for r in requests]
                    + [(r.ended if r.ended is not None else float("inf"), -1)
                       for r in requests])
    busy = peak = 0
    for _when, step in events:
        busy += step
        peak = max(peak, busy)
    return peak


def test_a_first_push_stores_several_packs_at_once(moto_s3: S3Server, proxy: LatencyProxy,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("roam_core.store.packer.PACK_TARGET", PACK_TARGET)
    settings = moto_s3.settings(moto_s3.fresh_bucket())
    settings["s3_endpoint_url"] = proxy.url
    desk = Home(tmp_path / "desk", "desk", Store("s3", settings, moto_s3.env(), key=new_key()),
                Runner())
    rng = random.Random(22)
    for number in range(FILES):
        desk.write(f"skills/media/skill{number}/blob.bin", rng.randbytes(PACK_TARGET))
    desk.write("memories/MEMORY.md", "first\n")
    assert desk.roam("init", "--create-remote").code == 0

    proxy.reset()
    pushed = desk.roam("push")
    assert pushed.code == 0, pushed.err
    requests = proxy.requests()
    packs = [r for r in requests if r.method == "PUT" and "/objects/packs/" in r.target
             and r.body >= DATA_PACK]
    assert len(packs) >= FILES - 1, [(r.target, r.body) for r in requests]
    # every pack's index is stored, each after its pack: the commit order holds
    assert len([r for r in requests if r.method == "PUT" and "/objects/index/" in r.target]) \
        >= len(packs)
    assert _peak(packs) >= 3, [(round(r.started, 3), round(r.ended or 0, 3)) for r in packs]
