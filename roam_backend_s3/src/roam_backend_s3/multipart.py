"""Multipart upload of one large object, create-once like every other object.

Parts are cut from the caller's buffer one at a time, so memory beyond the object itself is
one part. The upload is completed with `If-None-Match: *`, so a key that appeared meanwhile
is refused by the server; any failure aborts the upload so no parts linger (and bill).
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import math
from collections.abc import Callable
from typing import Any

from roam_backend_s3.errors import client_error_code, retried
from roam_core.plugin import ObjectExists

#: S3 allows at most this many parts, each at least 5 MiB except the last.
MAX_PARTS = 10_000
MIN_PART = 5 * 1024 * 1024

Request = Callable[..., dict[str, Any]]


def part_size_for(total: int, preferred: int) -> int:
    """The part size to use: `preferred` unless that would need more than `MAX_PARTS`."""
    return max(MIN_PART, preferred, math.ceil(total / MAX_PARTS))


def multipart_etag(part_etags: list[str]) -> str | None:
    """The ETag S3 gives a completed multipart object, or None if a part's ETag is not MD5."""
    digests = b""
    for etag in part_etags:
        try:
            digests += binascii.unhexlify(etag.strip('"'))
        except (binascii.Error, ValueError):
            return None
    return f'"{hashlib.md5(digests, usedforsecurity=False).hexdigest()}-{len(part_etags)}"'


def upload(request: Request, key: str, s3_key: str, data: bytes, part_size: int,
           errors: tuple[type[BaseException], ...]) -> None:
    """Upload `data` to `s3_key` in parts; raise `ObjectExists` if the key already exists.

    `request(operation, **params)` performs one S3 call (bucket filled in) and raises
    botocore's exceptions, which are left to the caller to translate.
    """
    view = memoryview(data)
    size = part_size_for(len(data), part_size)
    created = request("CreateMultipartUpload", Key=s3_key,
                      ContentType="application/octet-stream")
    upload_id = created["UploadId"]
    etags: list[str] = []
    try:
        for number, start in enumerate(range(0, len(data), size), start=1):
            # One part's copy at a time: botocore needs a bytes body it can re-send on retry.
            body = bytes(view[start : start + size])
            answer = request("UploadPart", Key=s3_key, UploadId=upload_id, PartNumber=number,
                             Body=body)
            etags.append(answer["ETag"])
            del body
        parts = [{"ETag": etag, "PartNumber": n} for n, etag in enumerate(etags, start=1)]
        try:
            request("CompleteMultipartUpload", Key=s3_key, UploadId=upload_id,
                    MultipartUpload={"Parts": parts}, IfNoneMatch="*")
        except errors as error:
            code, status = client_error_code(error)
            if status == 412 or code == "PreconditionFailed":
                if retried(error) and _landed(request, s3_key, etags, errors):
                    return
                raise ObjectExists(key) from None
            if retried(error) and code == "NoSuchUpload" and _landed(request, s3_key, etags,
                                                                       errors):
                # The first attempt completed the upload but its answer was lost.
                return
            raise
    except BaseException:
        with contextlib.suppress(*errors):
            request("AbortMultipartUpload", Key=s3_key, UploadId=upload_id)
        raise


def _landed(request: Request, s3_key: str, etags: list[str],
            errors: tuple[type[BaseException], ...]) -> bool:
    """Whether the object at `s3_key` is the one these parts make (our lost success)."""
    expected = multipart_etag(etags)
    if expected is None:
        return False
    try:
        head = request("HeadObject", Key=s3_key)
    except errors:
        return False
    return head.get("ETag") == expected
