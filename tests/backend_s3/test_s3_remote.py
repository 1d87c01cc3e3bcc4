"""Settings, credentials, create_remote, doctor and identity: what a user meets first."""

from __future__ import annotations

import subprocess
import sys

import pytest
from backend_s3_helpers import open_backend, server_backend

from roam_backend_s3.backend import S3Backend
from roam_backend_s3.config import Credentials, parse_settings, read_credentials
from roam_core.errors import BackendError, ConfigError, ObjectNotFound, TransientBackendError
from support.s3_servers import SEAWEED_ACCESS_KEY, SEAWEED_SECRET_KEY, S3Server

pytest_plugins = ("support.s3_servers",)


def _one_clean_line(message: str, *secrets: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message
    for secret in secrets:
        assert secret not in message


# -- credentials -----------------------------------------------------------------------------


@pytest.mark.parametrize(("access", "secret", "code"), [
    (SEAWEED_ACCESS_KEY, "wrong-secret-0c9a41", "SignatureDoesNotMatch"),
    ("unknown-access-key-77", SEAWEED_SECRET_KEY, "InvalidAccessKeyId"),
])
def test_wrong_credentials_are_one_clear_line(seaweedfs_s3: S3Server, access: str, secret: str,
                                              code: str) -> None:
    bucket = seaweedfs_s3.fresh_bucket()
    given = {"ROAM_S3_ACCESS_KEY_ID": access, "ROAM_S3_SECRET_ACCESS_KEY": secret}
    backend = open_backend(seaweedfs_s3.settings(bucket), given.get)
    for call in (lambda: backend.read_ref("HEAD"), lambda: backend.put_new("data/a", b"x"),
                 lambda: list(backend.list())):
        with pytest.raises(BackendError) as raised:
            call()
        assert not isinstance(raised.value, TransientBackendError)
        message = str(raised.value)
        _one_clean_line(message, secret, access)
        assert f"S3 refused the credentials ({code}) for bucket {bucket}" in message
    rows = backend.doctor()
    assert rows and not any(ok for _name, ok, _detail in rows)
    assert code in rows[0][2]
    assert all("skipped: the credentials were refused" in detail for _n, _ok, detail in rows[1:])
    for _name, _ok, detail in rows:
        _one_clean_line(detail, secret)


def test_credentials_come_from_secrets_else_the_default_chain() -> None:
    assert read_credentials(lambda name: None) is None
    found = read_credentials({"ROAM_S3_ACCESS_KEY_ID": "AKID", "ROAM_S3_SECRET_ACCESS_KEY":
                              "s3cr3t", "ROAM_S3_SESSION_TOKEN": "tok"}.get)
    assert found == Credentials("AKID", "s3cr3t", "tok")
    assert "s3cr3t" not in repr(found) and "AKID" not in repr(found)
    with pytest.raises(ConfigError, match="ROAM_S3_SECRET_ACCESS_KEY is missing"):
        read_credentials({"ROAM_S3_ACCESS_KEY_ID": "AKID"}.get)


def test_default_chain_reads_the_aws_environment(moto_s3: S3Server,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-env-secret")
    bucket = moto_s3.fresh_bucket()
    backend = open_backend(moto_s3.settings(bucket), lambda name: None)
    backend.put_new("data/a", b"chain")
    assert backend.get("data/a") == b"chain"


def test_backend_objects_hold_no_secret_in_their_repr(seaweedfs_s3: S3Server) -> None:
    backend = server_backend(seaweedfs_s3, seaweedfs_s3.fresh_bucket())
    for text in (repr(backend), backend.identity(), str(vars(backend))):
        assert SEAWEED_SECRET_KEY not in text and SEAWEED_ACCESS_KEY not in text


# -- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(("settings", "problem"), [
    ({}, "needs the setting s3_bucket"),
    ({"s3_bucket": "Bad_Bucket"}, "not a valid bucket name"),
    ({"s3_bucket": "ok-bucket", "s3_prefix": "../up"}, "s3_prefix"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "ftp://x"}, r"http\(s\)://"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "https://k:s@host"}, "must not contain"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "s3://k:s@host"}, "must not contain"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "k:s@host"}, "must not contain"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "https://k:s@host:x"}, "must not contain"),
    ({"s3_bucket": "ok-bucket", "s3_endpoint_url": "https://host/bucket"}, "scheme://host"),
    ({"s3_bucket": "ok-bucket", "s3_region": "Not A Region"}, "not a region"),
    ({"s3_bucket": 12}, "must be a string"),
])
def test_bad_settings_are_config_errors(settings: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as raised:
        open_backend(settings, lambda name: None)
    _one_clean_line(str(raised.value), "k:s")


def test_settings_defaults_and_r2() -> None:
    plain = parse_settings({"s3_bucket": "my-bucket"})
    assert (plain.prefix, plain.endpoint_url, plain.region, plain.host) == (
        "roam", None, None, "aws")
    r2 = parse_settings({"s3_bucket": "my-bucket", "s3_prefix": "/a/b/",
                         "s3_endpoint_url": "https://ACCOUNT.r2.cloudflarestorage.com/"})
    assert r2.region == "auto" and r2.prefix == "a/b"
    assert r2.endpoint_url == "https://ACCOUNT.r2.cloudflarestorage.com"
    backend = S3Backend(r2, None)
    assert backend.identity() == "s3://account.r2.cloudflarestorage.com/my-bucket/a/b"
    assert S3Backend(plain).identity() == "s3://aws/my-bucket/roam"
    no_prefix = parse_settings({"s3_bucket": "my-bucket", "s3_prefix": ""})
    assert S3Backend(no_prefix).identity() == "s3://aws/my-bucket"


def test_plugin_declares_its_settings_and_imports_boto3_lazily() -> None:
    code = ("import sys\nfrom roam_core.manager import get_manager\n"
            "record = get_manager().backend('s3')\n"
            "print(sorted(s.name for s in record.settings), 'boto3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("]")
    assert "'s3_bucket', 's3_endpoint_url', 's3_prefix', 's3_region'" in out[0]
    assert out[1].strip() == "False"


# -- the bucket ------------------------------------------------------------------------------


def test_missing_bucket_names_the_fix(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket(create=False)
    backend = server_backend(s3_server, bucket)
    for call in (lambda: backend.read_ref("HEAD"), lambda: backend.put_new("data/a", b"x"),
                 lambda: backend.swap_ref("HEAD", b"x", None), backend.ping):
        with pytest.raises(BackendError, match="roam init --create-remote") as raised:
            call()
        _one_clean_line(str(raised.value))
    rows = backend.doctor()
    assert rows[0][0] == "s3 bucket" and not rows[0][1]
    assert all(not ok and "skipped" in detail for _n, ok, detail in rows[1:])


def test_create_remote_creates_the_bucket_and_is_idempotent(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket(create=False)
    backend = server_backend(s3_server, bucket)
    backend.create_remote()
    assert bucket in {b["Name"] for b in s3_server.client().list_buckets()["Buckets"]}
    version = backend.swap_ref("HEAD", b"gen-1", None)
    backend.put_new("data/a", b"kept")
    backend.create_remote()
    server_backend(s3_server, bucket).create_remote()
    assert backend.read_ref("HEAD") == (b"gen-1", version)
    assert backend.get("data/a") == b"kept"
    with pytest.raises(ObjectNotFound):
        backend.get("data/b")


def test_create_remote_honours_the_region(moto_s3: S3Server) -> None:
    bucket = moto_s3.fresh_bucket(create=False)
    backend = server_backend(moto_s3, bucket, s3_region="eu-west-1")
    backend.create_remote()
    location = moto_s3.client(region_name="eu-west-1").get_bucket_location(Bucket=bucket)
    assert location["LocationConstraint"] == "eu-west-1"
    backend.create_remote()


def test_doctor_on_a_healthy_bucket(s3_server: S3Server) -> None:
    bucket = s3_server.fresh_bucket()
    rows = server_backend(s3_server, bucket).doctor()
    assert [name for name, _ok, _detail in rows] == ["s3 bucket", "s3 read", "s3 write"]
    assert all(ok for _name, ok, _detail in rows), rows
    assert "conditional writes" in rows[-1][2]
    # Doctor writes nothing: the write probe is a conditional PUT that cannot succeed.
    assert s3_server.client().list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
