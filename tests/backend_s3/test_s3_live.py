"""The contract against a real S3 or R2 bucket, only when `ROAM_TEST_S3_*` says which.

    ROAM_TEST_S3_BUCKET=my-roam-test            (required; must exist)
    ROAM_TEST_S3_ENDPOINT_URL=https://<account>.r2.cloudflarestorage.com   (R2; empty for AWS)
    ROAM_TEST_S3_REGION=auto                    (R2: auto; AWS: the bucket's region)
    ROAM_TEST_S3_ACCESS_KEY_ID=...  ROAM_TEST_S3_SECRET_ACCESS_KEY=...   (else the AWS chain)
    ROAM_TEST_S3_PREFIX=roam-live-tests         (each test works below <prefix>/<random>/)

Every test deletes what it wrote under its own random prefix afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from backend_s3_helpers import open_backend

from roam_backend_s3.backend import S3Backend
from roam_core.storage import Backend
from roam_core.testing.contract import BackendContract

ENV = os.environ
BUCKET = ENV.get("ROAM_TEST_S3_BUCKET", "")
if not BUCKET:
    pytest.skip("live S3/R2 tests run only when ROAM_TEST_S3_BUCKET is set (see "
                "roam_backend_s3/README.md, 'Backend setup and live tests')",
                allow_module_level=True)


def _secret(name: str) -> str | None:
    return ENV.get(name.replace("ROAM_S3_", "ROAM_TEST_S3_", 1)) or None


def _settings(prefix: str) -> dict[str, Any]:
    return {"backend": "s3", "s3_bucket": BUCKET, "s3_prefix": prefix,
            "s3_endpoint_url": ENV.get("ROAM_TEST_S3_ENDPOINT_URL") or None,
            "s3_region": ENV.get("ROAM_TEST_S3_REGION") or None}


def _remove_everything_below(backend: S3Backend, prefix: str) -> None:
    """Delete the test's objects and abort its unfinished uploads (tests only; roam never)."""
    keys = [backend.settings.key("objects", key) for key in backend.list("")]
    keys += [backend.settings.key("refs", "HEAD"), backend.settings.key("doctor", "probe")]
    for start in range(0, len(keys), 1000):
        batch = [{"Key": key} for key in keys[start : start + 1000]]
        backend._request("DeleteObjects", Delete={"Objects": batch, "Quiet": True})
    uploads = backend._request("ListMultipartUploads", Prefix=prefix + "/").get("Uploads", [])
    for upload in uploads:
        backend._request("AbortMultipartUpload", Key=upload["Key"],
                         UploadId=upload["UploadId"])


@pytest.fixture
def live_prefix() -> Iterator[str]:
    prefix = f"{ENV.get('ROAM_TEST_S3_PREFIX', 'roam-live-tests').strip('/')}/" \
             f"{secrets.token_hex(6)}"
    yield prefix
    cleaner = open_backend(_settings(prefix), _secret)
    assert isinstance(cleaner, S3Backend)
    _remove_everything_below(cleaner, prefix)


class TestLiveContract(BackendContract):
    backend_name = "s3"
    race_threads = 16
    secrets: ClassVar[tuple[str, ...]] = tuple(
        value for value in (ENV.get("ROAM_TEST_S3_ACCESS_KEY_ID"),
                            ENV.get("ROAM_TEST_S3_SECRET_ACCESS_KEY")) if value)

    @pytest.fixture
    def backend_factory(self, live_prefix: str) -> Callable[[], Backend]:
        return lambda: open_backend(_settings(live_prefix), _secret)


def test_live_doctor_and_create_remote_on_an_existing_bucket(live_prefix: str) -> None:
    backend = open_backend(_settings(live_prefix), _secret)
    backend.create_remote()  # the bucket exists: a no-op
    rows = backend.doctor()
    assert all(ok for _name, ok, _detail in rows), rows
    assert list(backend.list("")) == []
