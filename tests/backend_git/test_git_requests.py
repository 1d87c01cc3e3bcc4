"""On git over smart HTTP an operation is one fetch and at most one push, whatever the home.

The remote sits behind bench/netproxy.py, which counts every HTTP request: a fetch is the ref
advertisement (GET info/refs) and one or two upload-pack POSTs, a push the receive-pack
advertisement and one POST, however many files, folders and packs the generation holds.
"""

from __future__ import annotations

import sys
from pathlib import Path

from campaign.harness import Home, Runner, Store, new_key

from support.git_remotes import bare_repo, smart_http

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import Request, latency_proxy


def _calls(requests: list[Request]) -> dict[str, int]:
    """Fetches (upload-pack) and pushes (receive-pack), by their advertisement requests."""
    counts = {"fetch": 0, "push": 0, "other": 0}
    for request in requests:
        if request.method != "GET":
            continue
        if "service=git-upload-pack" in request.target:
            counts["fetch"] += 1
        elif "service=git-receive-pack" in request.target:
            counts["push"] += 1
        else:
            counts["other"] += 1
    return counts


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
            for number in range(40):
                desk.write(f"skills/group{number % 5}/skill{number}/SKILL.md", f"s{number}\n")
                desk.write(f"skills/group{number % 5}/skill{number}/refs/a.md", f"r{number}\n")
            assert desk.roam("init", "--create-remote").code == 0

            proxy.reset()
            assert desk.roam("push").code == 0
            push = proxy.requests()
            assert _calls(push) == {"fetch": 1, "push": 1, "other": 0}
            assert len(push) <= 5, [(r.method, r.target) for r in push]

            assert laptop.roam("init").code == 0
            proxy.reset()
            assert laptop.roam("pull", "--apply").code == 0
            pull = proxy.requests()
            assert _calls(pull) == {"fetch": 1, "push": 0, "other": 0}
            assert len(pull) <= 3, [(r.method, r.target) for r in pull]

            proxy.reset()
            assert laptop.roam("status").code == 0
            assert _calls(proxy.requests())["push"] == 0
            assert len(proxy.requests()) <= 3

            desk.write("skills/group1/skill6/SKILL.md", "changed\n")
            proxy.reset()
            assert desk.roam("push").code == 0
            assert _calls(proxy.requests()) == {"fetch": 1, "push": 1, "other": 0}
