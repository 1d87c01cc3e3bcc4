"""How boto3's failures become roam's one error tree, in one line, without secrets.

Messages are built from the S3 error code, the HTTP status and botocore's own description
of network failures, never from request headers, so no credential can reach them.
"""

from __future__ import annotations

from typing import Any

from roam_core.plugin import BackendError, DeadlineExceeded, RoamError, TransientBackendError
from roam_core.plugin import deadline as _deadline


class CredentialsRefused(BackendError):
    """The server did not accept the credentials (wrong key, wrong secret, expired token)."""


#: Codes that mean "the server did not accept who you are".
CREDENTIAL_CODES = {
    "InvalidAccessKeyId": "unknown access key; check ROAM_S3_ACCESS_KEY_ID",
    "SignatureDoesNotMatch": "wrong secret key; check ROAM_S3_SECRET_ACCESS_KEY",
    "InvalidToken": "invalid session token; check ROAM_S3_SESSION_TOKEN",
    "ExpiredToken": "the session token has expired",
    "TokenRefreshRequired": "the session token has expired",
    "Unauthorized": "check ROAM_S3_ACCESS_KEY_ID and ROAM_S3_SECRET_ACCESS_KEY",
    "InvalidSecurity": "check ROAM_S3_ACCESS_KEY_ID and ROAM_S3_SECRET_ACCESS_KEY",
}

#: The IAM permission each operation needs, to name it when access is denied.
PERMISSIONS = {
    "GetObject": "s3:GetObject", "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject", "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject", "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "ListObjectsV2": "s3:ListBucket", "HeadBucket": "s3:ListBucket",
    "CreateBucket": "s3:CreateBucket",
}

REGION_CODES = {"AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraint"}

TRANSIENT_CODES = {"ConditionalRequestConflict", "SlowDown", "RequestTimeout",
                   "ServiceUnavailable", "InternalError", "Throttling", "ThrottlingException"}


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a message is one line, and keep it short."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def client_error_code(error: BaseException) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore `ClientError`, ("", 0) for anything else."""
    response: Any = getattr(error, "response", None)
    if not isinstance(response, dict):
        return "", 0
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


def retried(error: BaseException) -> bool:
    """Whether botocore sent the request more than once before this answer."""
    response: Any = getattr(error, "response", None)
    if not isinstance(response, dict):
        return False
    return int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0) > 0


def translate(error: BaseException, operation: str, bucket: str, where: str) -> RoamError:
    """The roam error for a botocore/boto3 failure during `operation` on `bucket` at `where`."""
    from botocore import exceptions as bx

    if isinstance(error, RoamError):
        return error
    if isinstance(error, bx.ClientError):
        return _client_error(error, operation, bucket, where)
    if isinstance(error, bx.NoCredentialsError | bx.PartialCredentialsError
                  | bx.CredentialRetrievalError):
        return BackendError(f"no usable S3 credentials for bucket {bucket}: set "
                            "ROAM_S3_ACCESS_KEY_ID and ROAM_S3_SECRET_ACCESS_KEY "
                            f"({type(error).__name__})")
    if isinstance(error, bx.SSLError):
        return BackendError(f"S3 endpoint {where}: TLS failed during {operation}: "
                            f"{one_line(str(error))}")
    if isinstance(error, bx.ConnectionError | bx.HTTPClientError | bx.IncompleteReadError
                  | ConnectionError | TimeoutError):
        return _network_error(error, operation, where)
    if isinstance(error, bx.ParamValidationError):
        return BackendError(f"S3 {operation} was given an invalid parameter: "
                            f"{one_line(str(error))}")
    if isinstance(error, bx.BotoCoreError):
        return BackendError(f"S3 {operation} failed at {where}: {one_line(str(error))}")
    return BackendError(f"S3 {operation} failed at {where}: "
                        f"{one_line(f'{type(error).__name__}: {error}')}")


def _network_error(error: BaseException, operation: str, where: str) -> RoamError:
    reason = one_line(f"{type(error).__name__}: {error}")
    current = _deadline.current()
    if current is not None and current.expired():
        return DeadlineExceeded(f"{current.operation} ran out of time waiting for S3 endpoint "
                                f"{where} ({operation}): {reason}")
    return TransientBackendError(f"S3 endpoint {where} did not answer {operation}: {reason}")


def _client_error(error: Any, operation: str, bucket: str, where: str) -> RoamError:
    code, status = client_error_code(error)
    message = one_line(error.response.get("Error", {}).get("Message", "") or "")
    if code in CREDENTIAL_CODES or status == 401:
        hint = CREDENTIAL_CODES.get(code, "check ROAM_S3_ACCESS_KEY_ID and "
                                    "ROAM_S3_SECRET_ACCESS_KEY")
        return CredentialsRefused(f"S3 refused the credentials ({code or status}) for bucket "
                                  f"{bucket} at {where}: {hint}")
    if code in ("AccessDenied", "AllAccessDisabled") or status == 403:
        permission = PERMISSIONS.get(operation, "the needed permission")
        if not code:
            # A HEAD answer has no body: a wrong secret and a missing permission look alike.
            return BackendError(f"S3 refused {operation} on bucket {bucket} at {where} (403): "
                                f"wrong credentials, or they lack {permission}")
        return BackendError(f"S3 denied {operation} on bucket {bucket} at {where} "
                            f"({code}): the credentials lack {permission}")
    if code == "NoSuchBucket" or (status == 404 and operation == "HeadBucket"):
        return BackendError(f"S3 bucket {bucket} does not exist at {where}: run "
                            "`roam init --create-remote` or create the bucket")
    if code in REGION_CODES or status == 301:
        return BackendError(f"S3 bucket {bucket} at {where} is in another region "
                            f"({code or status}): set s3_region to the bucket's region")
    if code in TRANSIENT_CODES or status >= 500 or status == 429:
        return TransientBackendError(f"S3 {operation} on bucket {bucket} at {where} failed "
                                     f"({code or status}): {message}")
    return BackendError(f"S3 {operation} on bucket {bucket} at {where} failed "
                        f"({code or 'HTTP'} {status}): {message}")
