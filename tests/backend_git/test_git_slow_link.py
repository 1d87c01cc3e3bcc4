"""A slow link: a large push or fetch may take longer than git_transfer_timeout while it moves.

`git_transfer_timeout` (600 s) bounds one git transfer; a first push of 1 GiB over a 1 MB/s
uplink needs ~1,000 s, and was killed at 600 s on every try. The budget of a transfer of
known size is the time its bytes take at core's floor rate (`roam_core.deadline.FLOOR_RATE`,
256 KiB/s), when that is longer. Here a real smart-HTTP remote sits behind bench/netproxy.py
carrying 512 KiB/s each way, with a 2-second transfer timeout and a 2 MiB home.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

from support.cli import roam_env
from support.flow import configured_device, ok
from support.git_remotes import bare_repo, smart_http

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import latency_proxy

RATE = 512 * 1024
TIMEOUT = "2"


@contextlib.contextmanager
def _served(tmp_path: Path) -> Iterator[tuple[str, str, int, dict[str, str]]]:
    """A smart-HTTP host with one empty repository: its base URL, name, port, roam's env."""
    root = tmp_path / "served"
    repo = bare_repo(root)
    with smart_http(root) as base:
        yield (base, repo.name, int(base.rstrip("/").rpartition(":")[2]),
               roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(32)))


def test_a_push_and_a_first_fetch_larger_than_the_timeout_allows_finish_on_a_slow_link(
        tmp_path: Path) -> None:
    with _served(tmp_path) as (_base, repo, port, env), latency_proxy(port, rate=RATE) as proxy:
        url = f"{proxy.url}/{repo}"
        settings = {"backend": "git", "git_remote": url, "git_transfer_timeout": TIMEOUT}
        a = configured_device(tmp_path / "a", {**settings, "device_name": "desk"}, env)
        assets = tmp_path / "a" / "skills" / "media" / "assets"
        assets.mkdir(parents=True)
        blobs = {f"clip{n}.bin": secrets.token_bytes(512 * 1024) for n in range(4)}
        for name, data in blobs.items():
            (assets / name).write_bytes(data)
        ok(a("init", "--create-remote"))
        ok(a("push"))  # 2 MiB at 512 KiB/s: ~4 s against a 2 s timeout
        b = configured_device(tmp_path / "b", {**settings, "device_name": "laptop"}, env)
        ok(b("init"))  # the whole branch fetched: ~4 s too
        ok(b("pull", "--apply"))
    got = tmp_path / "b" / "skills" / "media" / "assets"
    assert {name: (got / name).read_bytes() for name in blobs} == blobs


def test_a_later_fetch_larger_than_the_timeout_allows_finishes_while_the_pack_keeps_coming(
        tmp_path: Path) -> None:
    """A pull of a large new generation is `git fetch`: its pack's growth moves the limit on."""
    with _served(tmp_path) as (base, repo, port, env):
        direct = {"backend": "git", "git_remote": f"{base}{repo}"}
        a = configured_device(tmp_path / "a", {**direct, "device_name": "desk"}, env)
        (tmp_path / "a" / "SOUL.md").write_text("soul\n")
        ok(a("init", "--create-remote"))
        ok(a("push"))
        with latency_proxy(port, rate=RATE) as proxy:
            slow = {"backend": "git", "git_remote": f"{proxy.url}/{repo}",
                    "git_transfer_timeout": TIMEOUT, "device_name": "laptop"}
            b = configured_device(tmp_path / "b", slow, env)
            ok(b("init"))  # a small first fetch
            ok(b("pull", "--apply"))
            assets = tmp_path / "a" / "skills" / "media" / "assets"
            assets.mkdir(parents=True)
            blobs = {f"clip{n}.bin": secrets.token_bytes(512 * 1024) for n in range(4)}
            for name, data in blobs.items():
                (assets / name).write_bytes(data)
            ok(a("push"))  # straight to the host
            ok(b("pull", "--apply"))  # 2 MiB fetched at 512 KiB/s, a 2 s timeout
    got = tmp_path / "b" / "skills" / "media" / "assets"
    assert {name: (got / name).read_bytes() for name in blobs} == blobs
