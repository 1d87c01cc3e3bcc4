"""bench/git_server.py: the benchmarks' smart-HTTP host streams both ways and loses nothing."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from pathlib import Path

from support.git_remotes import bare_repo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from git_server import streaming_http


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


def test_a_push_over_the_post_buffer_and_a_fetch_arrive_whole(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    repo = bare_repo(served, "store.git")
    work = tmp_path / "work"
    _git("init", "--quiet", str(work))
    (work / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # a chunked upload (> 1 MiB)
    (work / "small.txt").write_text("small\n")
    _git("-C", str(work), "add", ".")
    _git("-C", str(work), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "c")
    tip = _git("-C", str(work), "rev-parse", "HEAD")
    with streaming_http(served) as port:
        url = f"http://127.0.0.1:{port}/{repo.name}"
        _git("-C", str(work), "-c", "core.compression=0", "push", "--quiet", url,
             "HEAD:refs/heads/roam")
        assert _git(f"--git-dir={repo}", "rev-parse", "refs/heads/roam") == tip
        copy = tmp_path / "copy.git"
        _git("init", "--quiet", "--bare", str(copy))
        _git(f"--git-dir={copy}", "fetch", "--quiet", url, "+refs/heads/roam:refs/heads/roam")
        assert _git(f"--git-dir={copy}", "cat-file", "-p", f"{tip}:small.txt") == "small"
        _git(f"--git-dir={copy}", "fsck", "--strict")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", f"/{repo.name}/info/refs?service=git-upload-pack")
        answer = connection.getresponse()
        assert answer.getheader("Transfer-Encoding") == "chunked"  # sent as it is made
        assert b"refs/heads/roam" in answer.read()
        connection.close()
