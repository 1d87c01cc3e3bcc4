"""On git over smart HTTP an operation is one fetch and at most one push, whatever the home.

The remote (`git http-backend` on 127.0.0.1) sits behind bench/netproxy.py, which logs every
HTTP request with its body's first bytes, so each request falls in one operation class
(`netproxy.git_operation`):

- `advertise`: GET info/refs, the start of any git conversation (one per git command);
- `ls-refs`: an upload-pack POST asking for the refs (protocol v2 `command=ls-refs`);
- `fetch`: an upload-pack POST asking for objects (`command=fetch`);
- `receive-pack`: the push's POST, the pack and the ref update in one request.

A per-object round trip (a fetch per folder or pack, a push per object) multiplies these
counts, and a look too many (an `ls-remote` before a fetch that looks anyway) adds to them:
the counts below are exact, so either fails however small the home.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from campaign.harness import Home, Runner, Store, new_key

from support.git_remotes import bare_repo, smart_http

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import LatencyProxy, Request, git_operation, latency_proxy

#: What each class one operation costs, exactly; a class not named must not occur.
#: (A pack over git's http.postBuffer, 1 MiB, adds one small probe `receive-pack` POST; the
#: packs here are far smaller, so one push is exactly one.)
#: A look: one `git ls-remote` (capped at the connect budget, so a blackholed remote fails in
#: seconds, where a fetch would wait for the transfer timeout); a fetch only when the tip is new.
#: A push: one look and one `git push` (the tip it finds is the one this device has).
FIRST_PUSH = {"advertise": 2, "ls-refs": 1, "receive-pack": 1}
INCREMENTAL_PUSH = FIRST_PUSH
STATUS = {"advertise": 1, "ls-refs": 1}
#: A look that finds a new tip, then one `git fetch` of it.
PULL = {"advertise": 2, "ls-refs": 2, "fetch": 1}
#: init on a new device: its reachability check is the look; reading HEAD right after, in the
#: same operation, fetches the tip that look saw instead of listing the remote again, with
#: roam's own fetch (ownfetch.py: `want <tip>` needs no ls-refs; `git fetch` lists again).
INIT = {"advertise": 2, "ls-refs": 1, "fetch": 1}


def classes(requests: list[Request]) -> Counter[str]:
    return Counter(git_operation(request) for request in requests)


def assert_requests(proxy: LatencyProxy, expected: dict[str, int], what: str) -> Counter[str]:
    """The requests since the last reset are `expected`, class by class (no more, no fewer)."""
    requests = proxy.requests()
    found = classes(requests)
    log = [(r.method, r.target, r.body_head[:24]) for r in requests]
    assert dict(found) == expected, f"{what}: {dict(found)}, expected {expected}: {log}"
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
            first = assert_requests(proxy, FIRST_PUSH, "first push")

            # a new device's first look fetches the branch whole: one fetch, not one per folder
            proxy.reset()
            assert laptop.roam("init").code == 0
            joined = assert_requests(proxy, INIT, "init of a new device")
            proxy.reset()
            assert laptop.roam("pull", "--apply").code == 0
            assert_requests(proxy, STATUS, "pull into an empty home after init")
            assert (laptop.root / "skills/group4/skill39/refs/a.md").read_text() == "r39\n"

            for number in range(10):  # ten small files in ten folders
                desk.write(f"skills/group{number % 5}/skill{number}/notes.md", f"n{number}\n")
            proxy.reset()
            assert desk.roam("push").code == 0
            incremental = assert_requests(proxy, INCREMENTAL_PUSH, "incremental push")

            proxy.reset()
            assert desk.roam("status").code == 0
            assert_requests(proxy, STATUS, "status")

            proxy.reset()
            assert laptop.roam("pull", "--apply").code == 0
            pull = assert_requests(proxy, PULL, "pull of a new generation")
            assert (laptop.root / "skills/group4/skill9/notes.md").read_text() == "n9\n"

            proxy.reset()
            assert laptop.roam("status").code == 0
            assert_requests(proxy, STATUS, "status after a pull")
    print(f"first push {dict(first)}, incremental {dict(incremental)}, init {dict(joined)}, "
          f"pull {dict(pull)}")
