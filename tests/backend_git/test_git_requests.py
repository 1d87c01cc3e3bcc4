"""On git over smart HTTP an operation is one fetch and at most one push, whatever the home.

The remote (`git http-backend` on 127.0.0.1) sits behind bench/netproxy.py, which logs every
HTTP request with its body's first bytes, so each request falls in one operation class
(`netproxy.git_operation`):

- `advertise`: GET info/refs, the start of any git conversation (one per git command);
- `ls-refs`: an upload-pack POST asking for the refs (protocol v2 `command=ls-refs`);
- `fetch`: an upload-pack POST asking for objects (`command=fetch`);
- `receive-pack`: the push's POST, the pack and the ref update in one request.

A per-object round trip (a fetch per folder or pack, a push per object) multiplies these
counts, so the bounds below fail on it however small the home.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from campaign.harness import Home, Runner, Store, new_key

from support.git_remotes import bare_repo, smart_http

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import LatencyProxy, Request, git_operation, latency_proxy

#: The most of each class one operation may cost; a class not named must not occur.
#: (A pack over git's http.postBuffer, 1 MiB, adds one small probe `receive-pack` POST; the
#: packs here are far smaller, so one push is exactly one.)
FIRST_PUSH = {"advertise": 2, "ls-refs": 1, "fetch": 0, "receive-pack": 1}
INCREMENTAL_PUSH = FIRST_PUSH  # the tip is the one this device pushed: nothing to fetch
STATUS = {"advertise": 1, "ls-refs": 1}
PULL = {"advertise": 2, "ls-refs": 2, "fetch": 1}  # a look, then one fetch of the new tip
#: init on a new device: its reachability check, then the pull's look and fetch of the branch.
INIT = {"advertise": 3, "ls-refs": 3, "fetch": 1}


def classes(requests: list[Request]) -> Counter[str]:
    return Counter(git_operation(request) for request in requests)


def assert_within(proxy: LatencyProxy, bounds: dict[str, int], what: str) -> Counter[str]:
    """The requests since the last reset stay within `bounds`, class by class."""
    requests = proxy.requests()
    found = classes(requests)
    log = [(r.method, r.target, r.body_head[:24]) for r in requests]
    over = {name: count for name, count in found.items() if count > bounds.get(name, 0)}
    assert not over, f"{what}: {dict(found)} exceeds {bounds}: {log}"
    return found


def test_push_pull_and_status_are_one_fetch_and_one_push(tmp_path: Path) -> None:
    root = tmp_path / "served"
    root.mkdir()
    with smart_http(root) as base:
        repo = bare_repo(root, "store.git")
        port = int(base.rstrip("/").rpartition(":")[2])
        with latency_proxy(port, 0.002) as proxy:
            url = f"{proxy.url}/{repo.name}"
            store = Store("git", {"backend": "git", "git_remote": url}, key=new_key())
            runner = Runner()
            desk = Home(tmp_path / "desk", "desk", store, runner)
            laptop = Home(tmp_path / "laptop", "laptop", store, runner)
            # 45 folders, 80 files: per-folder or per-file round trips would show at once
            for number in range(40):
                desk.write(f"skills/group{number % 5}/skill{number}/SKILL.md", f"s{number}\n")
                desk.write(f"skills/group{number % 5}/skill{number}/refs/a.md", f"r{number}\n")
            assert desk.roam("init", "--create-remote").code == 0

            proxy.reset()
            assert desk.roam("push").code == 0
            first = assert_within(proxy, FIRST_PUSH, "first push")
            assert first["receive-pack"] == 1  # it did publish

            # a new device's first look fetches the branch whole: one fetch, not one per folder
            proxy.reset()
            assert laptop.roam("init").code == 0
            joined = assert_within(proxy, INIT, "init of a new device")
            assert joined["fetch"] >= 1
            proxy.reset()
            assert laptop.roam("pull", "--apply").code == 0
            assert_within(proxy, STATUS, "pull into an empty home after init")
            assert (laptop.root / "skills/group4/skill39/refs/a.md").read_text() == "r39\n"

            for number in range(10):  # ten small files in ten folders
                desk.write(f"skills/group{number % 5}/skill{number}/notes.md", f"n{number}\n")
            proxy.reset()
            assert desk.roam("push").code == 0
            incremental = assert_within(proxy, INCREMENTAL_PUSH, "incremental push")
            assert incremental["receive-pack"] == 1

            proxy.reset()
            assert desk.roam("status").code == 0
            assert_within(proxy, STATUS, "status")

            proxy.reset()
            assert laptop.roam("pull", "--apply").code == 0
            pull = assert_within(proxy, PULL, "pull of a new generation")
            assert pull["fetch"] >= 1
            assert (laptop.root / "skills/group4/skill9/notes.md").read_text() == "n9\n"

            proxy.reset()
            assert laptop.roam("status").code == 0
            assert_within(proxy, STATUS, "status after a pull")
    print(f"first push {dict(first)}, incremental {dict(incremental)}, init {dict(joined)}, "
          f"pull {dict(pull)}")
