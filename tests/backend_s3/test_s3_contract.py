"""The storage contract against two real S3 servers: moto and SeaweedFS."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from backend_s3_helpers import server_backend

from roam_core.storage import Backend
from roam_core.testing.contract import BackendContract
from support.s3_servers import MOTO_SECRET_KEY, SEAWEED_ACCESS_KEY, SEAWEED_SECRET_KEY, S3Server

pytest_plugins = ("support.s3_servers",)


class _S3Contract(BackendContract):
    backend_name = "s3"
    race_threads = 16

    @pytest.fixture
    def server(self) -> S3Server:
        raise NotImplementedError

    @pytest.fixture
    def backend_factory(self, server: S3Server) -> Callable[[], Backend]:
        bucket = server.fresh_bucket()
        return lambda: server_backend(server, bucket)


class TestMotoContract(_S3Contract):
    secrets = (MOTO_SECRET_KEY,)

    @pytest.fixture
    def server(self, moto_s3: S3Server) -> S3Server:
        return moto_s3


class TestSeaweedContract(_S3Contract):
    secrets = (SEAWEED_ACCESS_KEY, SEAWEED_SECRET_KEY)

    @pytest.fixture
    def server(self, seaweedfs_s3: S3Server) -> S3Server:
        return seaweedfs_s3
