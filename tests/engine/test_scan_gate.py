"""Issue 26: a finding in the LAST file the push scans still leaves nothing in the store.

The push scans beside the packing (docs/decisions.md, "The scan runs beside the packing"):
packs are sealed while the scan works, and held back until it passes. These tests make the
packer seal a pack before the scan reaches the last file (the scan of that file waits until
a pack has been sealed, bounded by time), then count the store's objects: a finding must
leave it exactly as it was, on a local store and on S3 (moto). A clean scan lets the same
push through.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet import Device, new_key
from roam_core.secretscan import worker as scan_worker
from roam_core.secretscan.scan import Scanner
from roam_core.secretscan.worker import WorkerScan
from roam_core.store import packer

pytest_plugins = ("support.s3_servers",)

LAST = "skills/zzz/SKILL.md"  # sorts after every other shared file: scanned last
TOKEN = "GITHUB_TOKEN=ghp_Fake0123456789abcdefghijklmnopqrstu"
#: how long the scan of the last file waits for the packer to seal a pack
PATIENCE = 30.0


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[dict, Callable[[], set[str]]]]:
    """(roam settings, a function listing every object key of the store)."""
    if request.param == "local":
        root = tmp_path / "store"
        root.mkdir()
        yield ({"backend": "local", "local_dir": str(root)},
               lambda: {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()})
        return
    server = request.getfixturevalue("moto_s3")
    bucket = server.fresh_bucket()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)

    def keys() -> set[str]:
        pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {item["Key"] for page in pages for item in page.get("Contents", [])}

    yield server.settings(bucket), keys


@pytest.fixture
def sealed_first(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """Make the scan of LAST wait (off the main thread) until the packer sealed a pack.

    Scanned on the main thread (the scan before the packing), there is nothing to wait for.
    A sealed pack is named (`pack_key`) just before it is stored. Returns {"overlapped":
    whether a pack was sealed before LAST's scan went on}.
    """
    monkeypatch.setattr("roam_core.store.packer.PACK_TARGET", 64 * 1024)  # packs seal early
    sealed = threading.Event()
    name, scan_file = packer.pack_key, Scanner.scan_file
    seen = {"overlapped": False}

    def naming(digest: str) -> str:
        sealed.set()
        return name(digest)

    def scanning(self: Scanner, rel: str, location: str) -> list:
        if rel == LAST and threading.current_thread() is not threading.main_thread():
            seen["overlapped"] = sealed.wait(PATIENCE)
        return scan_file(self, rel, location)

    monkeypatch.setattr(packer, "pack_key", naming)
    monkeypatch.setattr(Scanner, "scan_file", scanning)
    return seen


def _home(tmp_path: Path, settings: dict) -> Device:
    dev = Device(tmp_path / "a", "a", settings, new_key())
    dev.write("SOUL.md", "the shared persona\n")
    assert dev.roam("init").code == 0, "init"
    # ~1.3 MB of ordinary prose in files scanned before LAST: many 64 KiB packs
    for index in range(40):
        dev.write(f"skills/s{index:02d}/SKILL.md",
                  "".join(f"note {index} line {n} of plain words\n" for n in range(1000)))
    return dev


def test_a_secret_in_the_last_scanned_file_uploads_nothing(
        tmp_path: Path, store: tuple[dict, Callable[[], set[str]]],
        sealed_first: dict[str, bool]) -> None:
    settings, keys = store
    dev = _home(tmp_path, settings)
    dev.write(LAST, f"---\nname: zzz\n---\nthe user pasted {TOKEN}\n")
    before = keys()

    stopped = dev.roam("push")

    assert stopped.code == 1, stopped.out + stopped.err
    assert f"{LAST}:4 github-token" in stopped.err, stopped.err
    assert "ghp_Fake0123456789" not in stopped.err + stopped.out
    assert keys() == before  # no pack, no index, no tree, no snapshot, no HEAD

    dev.write(LAST, "---\nname: zzz\n---\nclean now\n")  # the same push, clean: it goes
    pushed = dev.roam("push")
    assert pushed.code == 0, pushed.err
    assert len(keys() - before) > 20  # the packs the gate held, their indexes, trees, HEAD


def test_the_scan_runs_beside_the_packing(tmp_path: Path,
                                          sealed_first: dict[str, bool]) -> None:
    root = tmp_path / "store"
    root.mkdir()
    dev = _home(tmp_path, {"backend": "local", "local_dir": str(root)})
    dev.write(LAST, "---\nname: zzz\n---\nclean\n")
    assert dev.roam("push").code == 0
    assert sealed_first["overlapped"]  # packs were sealed while the scan still worked


# The scan worker (roam_core/secretscan/worker.py): a large push scans its plain files in one
# other process, the push's own thread taking over when the push waits for the
# verdict. The worker's hooks hold it (SIGSTOP) or kill it, so who scans what is fixed by
# events, not by how fast this machine is.


@pytest.fixture
def scan_worker_armed(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], list[WorkerScan]]:
    """Every push scans with the worker process; `arm(action)` holds or kills it at its start.

    Returns the scans started, to read who took over and why.
    """
    monkeypatch.setattr(scan_worker, "WORKER_MIN_BYTES", 0)
    started: list[WorkerScan] = []

    def arm(action: str) -> list[WorkerScan]:
        def hook(self: WorkerScan, proc: subprocess.Popen[bytes]) -> None:
            started.append(self)
            if action == "hold":
                os.kill(proc.pid, signal.SIGSTOP)  # it never reports: the push takes over
            elif action == "kill":
                proc.kill()

        monkeypatch.setattr(WorkerScan, "_started", hook)
        return started

    return arm


@pytest.mark.timeout(240)  # a hand-over that never comes hangs the push: fail instead
@pytest.mark.parametrize("packs", ["sealed", "none"])
def test_a_held_scan_worker_hands_over_and_the_secret_uploads_nothing(
        tmp_path: Path, store: tuple[dict, Callable[[], set[str]]],
        scan_worker_armed: Callable[[str], list[WorkerScan]], monkeypatch: pytest.MonkeyPatch,
        packs: str) -> None:
    """Sealed packs fill the gate (the push stalls) / the packer finishes first."""
    if packs == "sealed":
        monkeypatch.setattr("roam_core.store.packer.PACK_TARGET", 64 * 1024)
        # the packing stages hold one pack at most: the packer waits at its second pack,
        # which the gate holds until the verdict (it cannot finish first)
        monkeypatch.setattr("roam_core.store.packer.LOCAL_PACK_BYTES", 64 * 1024)
        monkeypatch.setattr("roam_core.store.packer.REMOTE_PACK_BYTES", 64 * 1024)
    settings, keys = store
    dev = _home(tmp_path, settings)
    dev.write(LAST, f"---\nname: zzz\n---\nthe user pasted {TOKEN}\n")
    before = keys()
    scans = scan_worker_armed("hold")

    stopped = dev.roam("push")

    assert stopped.code == 1, stopped.out + stopped.err
    assert f"{LAST}:4 github-token" in stopped.err, stopped.err
    assert keys() == before  # no pack, no index, no tree, no snapshot, no HEAD
    [scan] = scans
    assert scan.handover.reason == ("stalled" if packs == "sealed" else "packed")
    assert not scan.reported and scan.own  # every plain file was the push's own to scan

    dev.write(LAST, "---\nname: zzz\n---\nclean now\n")
    pushed = dev.roam("push", "--json")
    assert pushed.code == 0, pushed.err
    assert len(keys() - before) > (20 if packs == "sealed" else 3)
    # the push says how long its packer stood at the gate for the verdict (the worker is
    # held again: with one pack of budget it stood there until this thread scanned it all)
    stalled = json.loads(pushed.out)["secret_scan_stall_seconds"]
    assert stalled > 0 if packs == "sealed" else stalled == 0


@pytest.mark.timeout(240)
@pytest.mark.parametrize("worker", ["kill", "run"])
def test_a_dead_or_free_scan_worker_stops_a_secret(
        tmp_path: Path, scan_worker_armed: Callable[[str], list[WorkerScan]], worker: str) -> None:
    """Killed at its start (the push scans every file) / left alone (it may scan them all)."""
    root = tmp_path / "store"
    root.mkdir()
    dev = _home(tmp_path, {"backend": "local", "local_dir": str(root)})
    dev.write(LAST, f"---\nname: zzz\n---\nthe user pasted {TOKEN}\n")
    before = sorted(root.rglob("*"))
    scans = scan_worker_armed(worker)

    stopped = dev.roam("push")

    assert stopped.code == 1 and f"{LAST}:4 github-token" in stopped.err, stopped.err
    assert sorted(root.rglob("*")) == before
    [scan] = scans
    assert scan.fed  # a first push: the worker was fed the files while the walk went on
    assert not scan.reported if worker == "kill" else (scan.reported or scan.own)


def test_a_large_first_push_starts_its_scan_worker_before_it_scans(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk feeds the worker its files as it finds them; a later small push starts none."""
    import roam_core.engine.push as push_module

    monkeypatch.setattr(scan_worker, "WORKER_MIN_BYTES", 1 << 20)  # the home holds ~1.3 MB
    events: list[str] = []
    spawn, outgoing = scan_worker._spawn, push_module.scan_outgoing
    walked = scan_worker.WalkFeed.walked

    def walk_over(self: scan_worker.WalkFeed) -> None:
        # the feed started once 1 MiB was found, before the last folders
        events.append("walked, feeding" if self._thread is not None else "walked")
        walked(self)

    monkeypatch.setattr(scan_worker.WalkFeed, "walked", walk_over)

    def spawning() -> subprocess.Popen[bytes]:
        events.append("spawn")
        return spawn()

    def scanning(*args: object, **kwargs: object) -> list:
        events.append("scan")
        return outgoing(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_worker, "_spawn", spawning)
    monkeypatch.setattr(push_module, "scan_outgoing", scanning)
    started: list[WorkerScan] = []
    monkeypatch.setattr(WorkerScan, "_started", lambda self, proc: started.append(self))
    root = tmp_path / "store"
    root.mkdir()
    dev = _home(tmp_path, {"backend": "local", "local_dir": str(root)})

    assert dev.roam("push").code == 0
    assert "walked, feeding" in events and events.count("spawn") == 1
    assert events.index("spawn") < events.index("scan")  # one worker, before the scan
    [scan] = started
    assert scan.fed and len(scan.reported) + len(scan.own) == len(scan.files) > 40
    assert scan.files[-1][0] == "skills/s39/SKILL.md"  # the walk's every folder was fed

    dev.write("skills/s00/SKILL.md", "changed\n")
    events.clear()
    assert dev.roam("push").code == 0
    assert events == ["scan"]  # not a first push: no worker started early (nor at all)


def test_a_first_push_fed_by_its_walk_finds_a_secret_in_any_file_of_a_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk feeds the worker folder by folder; every file is scanned as itself."""
    monkeypatch.setattr(scan_worker, "WORKER_MIN_BYTES", 0)
    # no hand-over: the worker scans every file, so what it was fed is what is checked
    monkeypatch.setattr(scan_worker.Handover, "hurry", lambda self, reason: None)
    started: list[WorkerScan] = []
    monkeypatch.setattr(WorkerScan, "_started", lambda self, proc: started.append(self))
    root = tmp_path / "store"
    root.mkdir()
    dev = _home(tmp_path, {"backend": "local", "local_dir": str(root)})
    for name in ("a", "b", "c", "d"):
        secret = f"the user pasted {TOKEN}\n" if name == "c" else "nothing here\n"
        dev.write(f"skills/many/{name}.md", f"# {name}\nplain words\n{secret}")
    before = sorted(root.rglob("*"))

    stopped = dev.roam("push")

    assert stopped.code == 1, stopped.out + stopped.err
    assert "skills/many/c.md:3 github-token" in stopped.err, stopped.err
    assert stopped.err.count("github-token") == 1
    assert sorted(root.rglob("*")) == before
    [scan] = started
    assert scan.fed and not scan.own and len(scan.reported) == len(scan.files) > 40


def test_a_first_push_that_fails_after_its_walk_leaves_no_scan_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's feed started a worker; the push stops before its scan: the worker ends."""
    from secretscan.test_pool import _descendants

    monkeypatch.setattr(scan_worker, "WORKER_MIN_BYTES", 0)
    started: list[WorkerScan] = []
    monkeypatch.setattr(WorkerScan, "_started", lambda self, proc: started.append(self))
    root = tmp_path / "store"
    root.mkdir()
    dev = _home(tmp_path, {"backend": "local", "local_dir": str(root), "max_file_mb": 1})
    dev.write("skills/zzz/big.md", "word " * (300 * 1024))  # 1.5 MB: over max_file_mb
    before = _descendants(os.getpid())

    stopped = dev.roam("push")

    assert stopped.code != 0 and "max_file_mb" in stopped.err, stopped.err
    [scan] = started  # the feed did start a worker...
    assert scan.proc is not None and scan.proc.returncode is not None  # ...and it ended
    assert _descendants(os.getpid()) <= before
