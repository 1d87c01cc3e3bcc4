"""The storage contract on S3 or Cloudflare R2, built on conditional writes (HTTP 412).

Layout in the bucket, below `s3_prefix`: `objects/<key>` (immutable, created with
`If-None-Match: *`) and `refs/<name>` (replaced with `If-Match: <etag>`; the ETag is the
version token). A ref's body starts with a header line carrying a random nonce, so every
write has a new ETag (no ABA) and a write whose answer was lost can be recognised as ours.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Any

from botocore import xform_name
from botocore.exceptions import BotoCoreError, ClientError

from roam_backend_s3 import multipart
from roam_backend_s3.clients import ClientPool
from roam_backend_s3.config import Credentials, S3Settings
from roam_backend_s3.errors import client_error_code, retried, translate
from roam_core.plugin import (
    Backend,
    BackendError,
    Capabilities,
    DoctorChecks,
    IntegrityError,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
    RoamError,
    validate_key,
    validate_ref,
)

#: Objects larger than this go up in parts (S3 caps a single PUT at 5 GiB; parts also keep
#: each request short enough for the read timeout). Well above a pack (16 MiB, a little more
#: when its last blob overshoots), so a whole pack is one PUT, not six round trips.
MULTIPART_THRESHOLD = 64 * 1024 * 1024
PART_SIZE = 8 * 1024 * 1024
#: S3's limit on keys per DeleteObjects request.
DELETE_BATCH = 1000
REF_MAGIC = b"roam-ref 1 "
_NONCE_HEX = 32
ERRORS: tuple[type[BaseException], ...] = (BotoCoreError, ClientError, OSError)


def wrap_ref(data: bytes) -> bytes:
    """The stored body of a ref: header line with a fresh nonce, then the ref's bytes."""
    return REF_MAGIC + secrets.token_hex(_NONCE_HEX // 2).encode() + b"\n" + data


def unwrap_ref(raw: bytes, where: str) -> bytes:
    """The ref's bytes from its stored body; `IntegrityError` if it is not roam's format."""
    head = len(REF_MAGIC) + _NONCE_HEX
    if not raw.startswith(REF_MAGIC) or raw[head : head + 1] != b"\n":
        raise IntegrityError(f"{where} is not a roam ref (was it written by another tool?)")
    return raw[head + 1 :]


def _not_found(error: BaseException) -> bool:
    code, status = client_error_code(error)
    return code in ("NoSuchKey", "404", "NotFound") or (status == 404 and code != "NoSuchBucket")


class S3Backend(Backend):
    """Objects and the ref in one bucket below a prefix. Thread-safe."""

    capabilities = Capabilities(remote=True, deletes=True, extra={"conditional_writes": True})

    def __init__(self, settings: S3Settings, credentials: Credentials | None = None, *,
                 multipart_threshold: int = MULTIPART_THRESHOLD, part_size: int = PART_SIZE,
                 list_page_size: int = 1000) -> None:
        self.settings = settings
        self.multipart_threshold = multipart_threshold
        self.part_size = part_size
        self.list_page_size = list_page_size
        self._clients = ClientPool(settings, credentials)

    def __repr__(self) -> str:
        return f"S3Backend({self.identity()})"

    # -- plumbing ------------------------------------------------------------------------

    def _request(self, operation: str, **params: Any) -> dict[str, Any]:
        """One S3 call on our bucket; botocore's exceptions are left to the caller."""
        method = getattr(self._clients.get(), xform_name(operation))
        result: dict[str, Any] = method(Bucket=self.settings.bucket, **params)
        return result

    def _failure(self, error: BaseException, operation: str) -> RoamError:
        name = getattr(error, "operation_name", None) or operation
        return translate(error, name, self.settings.bucket, self.settings.host)

    def _object_key(self, key: str) -> str:
        # Odd keys ("", "a//b", "../x") are refused rather than mapped onto other S3 keys.
        return self.settings.key("objects", validate_key(key))

    def _ref_key(self, name: str) -> str:
        return self.settings.key("refs", validate_ref(name))

    # -- objects -------------------------------------------------------------------------

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        if length == 0:
            if not self.exists(key):
                raise ObjectNotFound(key)
            return b""
        params: dict[str, Any] = {"Key": self._object_key(key)}
        if offset or length is not None:
            end = "" if length is None else str(offset + length - 1)
            params["Range"] = f"bytes={offset}-{end}"
        try:
            response = self._request("GetObject", **params)
            data: bytes = response["Body"].read()
        except ERRORS as error:
            if _not_found(error):
                raise ObjectNotFound(key) from None
            if client_error_code(error)[1] == 416:
                return b""  # the range starts at or past the end (or the object is empty)
            raise self._failure(error, "GetObject") from None
        if "Range" in params and not response.get("ContentRange"):
            # A server that ignored the Range header sent the whole object.
            data = data[offset:] if length is None else data[offset : offset + length]
        return data

    def exists(self, key: str) -> bool:
        # A one-byte GET rather than HEAD: HEAD cannot tell a missing key from a missing bucket.
        try:
            response = self._request("GetObject", Key=self._object_key(key), Range="bytes=0-0")
            response["Body"].read()
        except ERRORS as error:
            if _not_found(error):
                return False
            if client_error_code(error)[1] == 416:
                return True  # an empty object
            raise self._failure(error, "GetObject") from None
        return True

    def put_new(self, key: str, data: bytes) -> None:
        s3_key = self._object_key(key)
        if len(data) > self.multipart_threshold:
            self._put_large(key, s3_key, data)
            return
        for attempt in range(3):
            try:
                self._request("PutObject", Key=s3_key, Body=data, IfNoneMatch="*",
                              ContentType="application/octet-stream")
                return
            except ERRORS as error:
                code, status = client_error_code(error)
                if status == 412 or code == "PreconditionFailed":
                    if retried(error) and self._etag(s3_key) == _md5_etag(data):
                        return  # our first attempt landed; only its answer was lost
                    raise ObjectExists(key) from None
                if code == "ConditionalRequestConflict" and attempt < 2:
                    # AWS: another conditional write of this key is in flight; retry shortly.
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise self._failure(error, "PutObject") from None

    def _put_large(self, key: str, s3_key: str, data: bytes) -> None:
        # no look first: the conditional completion refuses a key that is there, and a look
        # costs every new object a round trip to save one that already exists
        try:
            multipart.upload(self._request, key, s3_key, data, self.part_size, ERRORS)
        except ERRORS as error:
            raise self._failure(error, "CompleteMultipartUpload") from None

    def _etag(self, s3_key: str) -> str | None:
        try:
            return str(self._request("HeadObject", Key=s3_key).get("ETag"))
        except ERRORS:
            return None

    def delete(self, keys: Iterable[str]) -> None:
        """DeleteObjects, up to 1,000 keys a request; a key already gone counts as deleted."""
        batch: list[str] = []
        for key in keys:
            batch.append(self._object_key(key))
            if len(batch) == DELETE_BATCH:
                self._delete_batch(batch)
                batch = []
        if batch:
            self._delete_batch(batch)

    def _delete_batch(self, s3_keys: list[str]) -> None:
        try:
            response = self._request("DeleteObjects", Delete={
                "Objects": [{"Key": key} for key in s3_keys], "Quiet": True})
        except ERRORS as error:
            raise self._failure(error, "DeleteObjects") from None
        failed = [item for item in response.get("Errors", ())
                  if item.get("Code") not in ("NoSuchKey", None)]
        if failed:
            first = failed[0]
            raise BackendError(f"S3 could not delete {len(failed)} object(s), e.g. "
                               f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}")

    def list(self, prefix: str = "") -> Iterator[str]:
        return self._list(self.settings.key("objects") + "/", prefix)

    def _list(self, base: str, prefix: str) -> Iterator[str]:
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Prefix": base + prefix, "MaxKeys": self.list_page_size}
            if token:
                params["ContinuationToken"] = token
            try:
                page = self._request("ListObjectsV2", **params)
            except ERRORS as error:
                raise self._failure(error, "ListObjectsV2") from None
            for item in page.get("Contents", ()):
                yield item["Key"][len(base) :]
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")
            if not token:
                raise BackendError(f"S3 listing of {self.identity()} was truncated without a "
                                   "continuation token")

    # -- the ref -------------------------------------------------------------------------

    def _read_ref_raw(self, s3_key: str) -> tuple[bytes, str] | None:
        try:
            response = self._request("GetObject", Key=s3_key)
            raw: bytes = response["Body"].read()
        except ERRORS as error:
            if _not_found(error):
                return None
            raise self._failure(error, "GetObject") from None
        return raw, str(response["ETag"])

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        found = self._read_ref_raw(self._ref_key(name))
        if found is None:
            return None
        raw, version = found
        return unwrap_ref(raw, f"{self.identity()}/refs/{name}"), version

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        s3_key = self._ref_key(name)
        body = wrap_ref(data)
        condition = {"IfNoneMatch": "*"} if expected_version is None else {
            "IfMatch": expected_version}
        try:
            response = self._request("PutObject", Key=s3_key, Body=body,
                                     ContentType="application/octet-stream", **condition)
        except ERRORS as error:
            code, status = client_error_code(error)
            # 412: not at the expected version; 404 (moto): If-Match on a missing ref;
            # 409 (AWS): another conditional write of the ref is in flight.
            if status in (412, 409) or (expected_version is not None and code == "NoSuchKey"):
                if retried(error):
                    current = self._read_ref_raw(s3_key)
                    if current is not None and current[0] == body:
                        return current[1]  # our earlier attempt won; only its answer was lost
                raise RefConflict(f"ref {name} of {self.identity()} moved: another device "
                                  "wrote it first") from None
            raise self._failure(error, "PutObject") from None
        etag = response.get("ETag") or self._etag(s3_key)
        if not etag:
            raise BackendError(f"S3 at {self.settings.host} returned no ETag for ref {name}")
        return str(etag)

    # -- the remote ----------------------------------------------------------------------

    def identity(self) -> str:
        parts = (self.settings.host, self.settings.bucket, self.settings.prefix)
        return "s3://" + "/".join(part for part in parts if part)

    def ping(self) -> None:
        self._read_ref_raw(self._ref_key("HEAD"))

    def create_remote(self) -> None:
        try:
            # ListObjectsV2 rather than HeadBucket: a HEAD answer has no body, so a wrong
            # secret and a missing permission would both be a bare 403.
            self._request("ListObjectsV2", Prefix=self.settings.key("refs") + "/", MaxKeys=1)
            return
        except ERRORS as error:
            if client_error_code(error)[0] != "NoSuchBucket":
                raise self._failure(error, "ListObjectsV2") from None
        params: dict[str, Any] = {}
        region = self.settings.region
        if region and region not in ("us-east-1", "auto"):
            params["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            self._request("CreateBucket", **params)
        except ERRORS as error:
            code, _status = client_error_code(error)
            if code == "BucketAlreadyOwnedByYou":
                return
            if code == "BucketAlreadyExists":
                raise BackendError(f"the bucket name {self.settings.bucket} is taken by another "
                                   "account: choose another s3_bucket") from None
            raise self._failure(error, "CreateBucket") from None

    def doctor(self) -> DoctorChecks:
        from roam_backend_s3.doctor import run_checks

        return run_checks(self)

    def close(self) -> None:
        self._clients.close()


def _md5_etag(data: bytes) -> str:
    return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
