"""`roam doctor` rows for S3: may these credentials list, read and write the bucket.

Nothing is written: the write check is a PUT with an `If-Match` that can never hold, which S3
authorises before it evaluates the condition, so "403" means the permission is missing and
"412"/"404" means it is there. A server that stores the probe anyway ignores conditional
writes, which roam cannot work without, and the row says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roam_backend_s3.errors import CredentialsRefused, client_error_code
from roam_core.plugin import BackendError, DoctorCheck, RoamError, TransientBackendError

if TYPE_CHECKING:
    from roam_backend_s3.backend import S3Backend

PROBE_ETAG = '"roam-doctor-probe-never-matches"'


class _BucketMissing(BackendError):
    """The bucket does not exist: nothing else can be checked."""


def run_checks(backend: S3Backend) -> list[DoctorCheck]:
    """Each check as a row; after a failure that blocks every check, the rest are skipped."""
    checks = [("s3 bucket", _bucket), ("s3 read", _read), ("s3 write", _write)]
    rows: list[DoctorCheck] = []
    for name, check in checks:
        try:
            rows.append((name, True, check(backend)))
        except (TransientBackendError, _BucketMissing, CredentialsRefused) as failure:
            rows.append((name, False, str(failure)))
            why = ("the endpoint did not answer" if isinstance(failure, TransientBackendError)
                   else "the credentials were refused"
                   if isinstance(failure, CredentialsRefused) else "the bucket does not exist")
            rows.extend((later, False, f"skipped: {why}") for later, _check in checks[len(rows):])
            break
        except RoamError as failure:
            rows.append((name, False, str(failure)))
    return rows


def _call(backend: S3Backend, operation: str, ok_statuses: tuple[int, ...] = (),
          **params: object) -> int:
    """Run one request; return the HTTP status (200 or an expected failure's status)."""
    from roam_backend_s3.backend import ERRORS

    try:
        backend._request(operation, **params)
    except ERRORS as error:
        code, status = client_error_code(error)
        failure = backend._failure(error, operation)
        if code == "NoSuchBucket":
            raise _BucketMissing(str(failure)) from None
        if status in ok_statuses:
            return status
        raise failure from None
    return 200


def _bucket(backend: S3Backend) -> str:
    # A listing rather than HeadBucket: its error answers carry a code (a wrong secret and a
    # missing permission are told apart), and it checks s3:ListBucket at the same time.
    prefix = f"{backend.settings.prefix}/" if backend.settings.prefix else ""
    _call(backend, "ListObjectsV2", Prefix=prefix, MaxKeys=1)
    return (f"bucket {backend.settings.bucket} answers at {backend.settings.host} and may be "
            "listed (s3:ListBucket)")


def _read(backend: S3Backend) -> str:
    _call(backend, "GetObject", (404,), Key=backend.settings.key("refs", "HEAD"))
    return "may read objects (s3:GetObject)"


def _write(backend: S3Backend) -> str:
    status = _call(backend, "PutObject", (404, 412), Key=backend.settings.key("doctor", "probe"),
                   Body=b"", IfMatch=PROBE_ETAG)
    if status == 200:
        raise RoamError(f"the server at {backend.settings.host} ignored If-Match: it does not "
                        "support conditional writes, which roam needs (a probe object was left "
                        f"at {backend.settings.key('doctor', 'probe')})")
    return "may write objects (s3:PutObject), and the server honours conditional writes"
