"""S3-specific duties on real servers: layout, multipart, lost answers, paging, the ref format."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest
from backend_s3_helpers import server_backend
from lossy_proxy import lossy_proxy

from roam_backend_s3 import multipart
from roam_backend_s3.backend import ERRORS, REF_MAGIC, S3Backend
from roam_core.errors import (
    BackendError,
    IntegrityError,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
)
from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)

MIB = 1024 * 1024


def _small_parts(server: S3Server, bucket: str) -> S3Backend:
    """A backend that switches to multipart above 6 MiB, in 5 MiB parts (S3's minimum)."""
    backend = server_backend(server, bucket)
    assert isinstance(backend, S3Backend)
    backend.multipart_threshold = 6 * MIB
    backend.part_size = 5 * MIB
    return backend


def _keys(server: S3Server, bucket: str) -> set[str]:
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {item["Key"] for page in pages for item in page.get("Contents", ())}


def test_layout_below_the_prefix(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    backend = server_backend(s3_server, bucket, s3_prefix="team/roam")
    backend.put_new("data/ab/cd", b"x")
    backend.swap_ref("HEAD", b"gen", None)
    assert _keys(s3_server, bucket) == {"team/roam/objects/data/ab/cd", "team/roam/refs/HEAD"}
    assert backend.identity() == f"s3://{urlsplit(s3_server.endpoint_url).netloc}/{bucket}/team/roam"


def test_prefixes_keep_stores_apart(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    one = server_backend(s3_server, bucket, s3_prefix="one")
    two = server_backend(s3_server, bucket, s3_prefix="two")
    one.put_new("data/a", b"1")
    one.swap_ref("HEAD", b"gen", None)
    assert list(two.list("")) == []
    assert two.read_ref("HEAD") is None
    with pytest.raises(ObjectNotFound):
        two.get("data/a")
    assert one.identity() != two.identity()


def test_ref_body_carries_a_nonce_so_equal_writes_get_new_versions(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    backend = server_backend(s3_server, bucket)
    first = backend.swap_ref("HEAD", b"same", None)
    second = backend.swap_ref("HEAD", b"same", first)
    assert first != second  # no ABA: an old token never matches again
    with pytest.raises(RefConflict):
        backend.swap_ref("HEAD", b"same", first)
    raw = s3_server.client().get_object(Bucket=bucket, Key="roam/refs/HEAD")["Body"].read()
    assert raw.startswith(REF_MAGIC) and raw.endswith(b"\nsame")


def test_a_foreign_ref_is_an_integrity_error(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    s3_server.client().put_object(Bucket=bucket, Key="roam/refs/HEAD", Body=b"not ours")
    with pytest.raises(IntegrityError, match="not a roam ref"):
        server_backend(s3_server, bucket).read_ref("HEAD")


def test_listing_pages_each_key_once(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    backend = server_backend(s3_server, bucket)
    assert isinstance(backend, S3Backend)
    backend.list_page_size = 7
    wanted = {f"data/{i:03d}" for i in range(40)}
    for key in wanted:
        backend.put_new(key, b"")
    backend.put_new("datum", b"")
    listed = list(backend.list("data/"))
    assert sorted(listed) == sorted(wanted)
    assert len(list(backend.list("dat"))) == 41


def test_multipart_round_trip_and_ranges_across_parts(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    backend = _small_parts(s3_server, bucket)
    payload = os.urandom(11 * MIB + 123)
    backend.put_new("packs/big", payload)
    head = s3_server.client().head_object(Bucket=bucket, Key="roam/objects/packs/big")
    assert head["ETag"].endswith('-3"')  # three parts: 5 + 5 + 1 MiB
    assert backend.get("packs/big") == payload
    edge = 5 * MIB
    assert backend.get("packs/big", edge - 10, 20) == payload[edge - 10 : edge + 10]
    assert backend.get("packs/big", len(payload) - 5) == payload[-5:]
    with pytest.raises(ObjectExists):
        backend.put_new("packs/big", b"small now")
    with pytest.raises(ObjectExists):
        backend.put_new("packs/big", os.urandom(7 * MIB))
    assert backend.get("packs/big") == payload


def test_multipart_completion_is_create_once_and_aborts(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    backend = _small_parts(s3_server, bucket)
    backend.put_new("packs/raced", b"the first writer")
    # Skip the early existence check: the server's If-None-Match on completion must refuse.
    with pytest.raises(ObjectExists):
        multipart.upload(backend._request, "packs/raced", "roam/objects/packs/raced",
                         os.urandom(6 * MIB), 5 * MIB, ERRORS)
    assert backend.get("packs/raced") == b"the first writer"
    uploads = s3_server.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert uploads == [], "a refused upload must be aborted"


def test_multipart_etag_matches_the_server(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    client = s3_server.client()
    parts = [os.urandom(5 * MIB), os.urandom(1000)]
    upload = client.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    etags = [client.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=n + 1,
                                Body=part)["ETag"] for n, part in enumerate(parts)]
    done = client.complete_multipart_upload(
        Bucket=bucket, Key="k", UploadId=upload,
        MultipartUpload={"Parts": [{"ETag": e, "PartNumber": n + 1} for n, e in enumerate(etags)]})
    assert multipart.multipart_etag(etags) == done["ETag"]
    assert multipart.multipart_etag(['"not-hex"']) is None


def test_part_size_grows_for_huge_objects() -> None:
    assert multipart.part_size_for(100 * MIB, 8 * MIB) == 8 * MIB
    assert multipart.part_size_for(100 * MIB, 1) == multipart.MIN_PART
    huge = 200 * 1024 * MIB
    assert multipart.part_size_for(huge, 8 * MIB) * multipart.MAX_PARTS >= huge


# -- answers lost on the way back ------------------------------------------------------------


def _through_proxy(server: S3Server, bucket: str, proxy_url: str) -> S3Backend:
    backend = server_backend(server, bucket, s3_endpoint_url=proxy_url)
    assert isinstance(backend, S3Backend)
    return backend


def test_swap_whose_answer_was_lost_is_recognised_as_ours(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    direct = server_backend(s3_server, bucket)
    base = direct.swap_ref("HEAD", b"gen-1", None)
    with lossy_proxy(urlsplit(s3_server.endpoint_url).port or 0) as proxy:
        proxy.drop_next(f"PUT /{bucket}/roam/refs/HEAD ".encode())
        version = _through_proxy(s3_server, bucket, proxy.url).swap_ref("HEAD", b"gen-2", base)
        assert proxy.dropped, "the proxy did not lose the answer"
    assert direct.read_ref("HEAD") == (b"gen-2", version)


def test_swap_that_really_lost_still_conflicts_after_a_lost_answer(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    direct = server_backend(s3_server, bucket)
    base = direct.swap_ref("HEAD", b"gen-1", None)
    winner = direct.swap_ref("HEAD", b"winner", base)
    with lossy_proxy(urlsplit(s3_server.endpoint_url).port or 0) as proxy:
        proxy.drop_next(f"PUT /{bucket}/roam/refs/HEAD ".encode())
        with pytest.raises(RefConflict):
            _through_proxy(s3_server, bucket, proxy.url).swap_ref("HEAD", b"loser", base)
        assert proxy.dropped
    assert direct.read_ref("HEAD") == (b"winner", winner)


def test_put_whose_answer_was_lost_is_not_reported_as_existing(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    with lossy_proxy(urlsplit(s3_server.endpoint_url).port or 0) as proxy:
        proxy.drop_next(f"PUT /{bucket}/roam/objects/data/lost ".encode())
        _through_proxy(s3_server, bucket, proxy.url).put_new("data/lost", b"payload")
        assert proxy.dropped
        other = _through_proxy(s3_server, bucket, proxy.url)
        with pytest.raises(ObjectExists):
            other.put_new("data/lost", b"different")


def test_multipart_whose_completion_answer_was_lost(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    payload = os.urandom(6 * MIB + 5)
    with lossy_proxy(urlsplit(s3_server.endpoint_url).port or 0) as proxy:
        proxy.drop_next(f"POST /{bucket}/roam/objects/packs/lost?uploadId=".encode())
        backend = _through_proxy(s3_server, bucket, proxy.url)
        backend.multipart_threshold, backend.part_size = 6 * MIB, 5 * MIB
        backend.put_new("packs/lost", payload)
        assert proxy.dropped
    assert server_backend(s3_server, bucket).get("packs/lost") == payload


@pytest.mark.parametrize("key", ["", "data//double", "data/../up", "/abs", "data/"])
def test_odd_keys_are_refused_not_mapped_onto_other_s3_keys(moto_s3: S3Server, key: str) -> None:
    bucket = moto_s3.fresh_bucket()
    backend = server_backend(moto_s3, bucket)
    with pytest.raises(BackendError, match="invalid object key"):
        backend.put_new(key, b"x")
    with pytest.raises(BackendError, match="invalid ref name"):
        backend.swap_ref("../HEAD", b"x", None)
    assert _keys(moto_s3, bucket) == set()


def test_delete_goes_in_batches_and_keeps_other_prefixes(
        s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_backend_s3 import backend as module

    bucket = s3_server.fresh_bucket()
    backend = server_backend(s3_server, bucket)
    keys = [f"packs/{index:02d}" for index in range(10)]
    for key in keys:
        backend.put_new(key, b"x")
    backend.put_new("trees/kept", b"t")
    calls: list[int] = []
    real = S3Backend._delete_batch
    monkeypatch.setattr(module, "DELETE_BATCH", 4)
    monkeypatch.setattr(S3Backend, "_delete_batch",
                        lambda self, batch: (calls.append(len(batch)), real(self, batch))[1])
    backend.delete(keys)
    assert calls == [4, 4, 2]
    remaining = {key.rsplit("/objects/", 1)[-1] for key in _keys(s3_server, bucket)
                 if "/objects/" in key}
    assert remaining == {"trees/kept"}
