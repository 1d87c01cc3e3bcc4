"""Issue 19: a push confirms the packs it reuses through an index, at few requests.

Up to two existence probes, then one LIST of `packs/` answers for every other pack; a lost
pack's blobs go up again in one new pack, with a void record so the next push does not count
on the lost one either.
"""

from __future__ import annotations

from campaign.harness import Home
from test_s3_requests import BIG_FILES, _count, _kind, fleet, proxy  # noqa: F401

from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)


def _packs(moto_s3: S3Server, home: Home) -> list[str]:
    pages = moto_s3.client().get_paginator("list_objects_v2").paginate(
        Bucket=home.store.settings["s3_bucket"], Prefix="roam/objects/packs/")
    return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))


def test_reused_packs_are_confirmed_with_one_listing(fleet: tuple[Home, Home],  # noqa: F811
                                                     proxy, moto_s3: S3Server) -> None:  # noqa: F811
    desk, _laptop = fleet
    assert desk.roam("push").code == 0
    packs = _packs(moto_s3, desk)
    assert len(packs) >= BIG_FILES // 2
    for number in range(BIG_FILES):  # the same bytes again: every blob is reused
        desk.write(f"memories/copy{number}.md", (desk.root / f"memories/big{number}.md")
                   .read_bytes())
    proxy.reset()
    pushed = desk.roam("push", "--json")
    assert pushed.code == 0 and pushed.json()["uploaded_bytes"] == 0
    requests = proxy.requests()
    probes = _count(requests, "GET", "packs") + _count(requests, "HEAD", "packs")
    listings = [r for r in requests if _kind(r) == "list" and "packs" in r.target]
    assert probes <= 2 and len(listings) <= 1, [(r.method, r.target) for r in requests]
    # format 2: the push's new trees go up in one tree pack; no data pack goes up again
    assert _count(requests, "PUT", "packs") <= 1
    print(f"push reusing {len(packs)} packs: {len(requests)} requests, {probes} probe(s), "
          f"{len(listings)} pack listing(s)")

    for lost in packs:  # the provider loses every pack
        moto_s3.client().delete_object(Bucket=desk.store.settings["s3_bucket"], Key=lost)
    for number in range(BIG_FILES):
        desk.write(f"memories/again{number}.md", (desk.root / f"memories/big{number}.md")
                   .read_bytes())
    proxy.reset()
    pushed = desk.roam("push", "--json")
    assert pushed.code == 0 and pushed.json()["uploaded_bytes"] > 0
    requests = proxy.requests()
    # the lost blobs go up again, packed as a first push packs them; one void record
    assert 1 <= _count(requests, "PUT", "packs") <= BIG_FILES
    assert _count(requests, "PUT", "voids") == 1
    probes = _count(requests, "GET", "packs") + _count(requests, "HEAD", "packs")
    listings = [r for r in requests if _kind(r) == "list" and "packs" in r.target]
    assert probes <= 2 and len(listings) <= 1, [(r.method, r.target) for r in requests]
    print(f"push after losing {len(packs)} packs: {len(requests)} requests, {probes} "
          f"probe(s), {len(listings)} pack listing(s)")
