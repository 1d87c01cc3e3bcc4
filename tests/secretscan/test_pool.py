"""The pooled push scan finds exactly what the serial scan finds; secrets reach workers by pipe."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

from roam_core.secretscan import pool
from roam_core.secretscan.rules import RULES, user_rules
from roam_core.secretscan.scan import Scanner, fingerprint

PUSH_RULES = [rule for rule in RULES if not rule.mirror_only]
PROSE = "the agent keeps a short note about the plan and the task for the next session\n"
LITERAL = "qZ7vN2pLx9Rt4WmK8sHdLiteral"
SHORT_LITERAL = "hunter2x"


def _corpus(root: Path, count: int = 60) -> list[tuple[str, str, int]]:
    """`count` files of prose with the rules' examples and the literals planted at random."""
    rng = random.Random(26)
    files = []
    for index in range(count):
        parts = []
        for _ in range(rng.randint(1, 30)):
            parts.append(PROSE * rng.randint(1, 40))
            if rng.random() < 0.4:
                parts.append(rng.choice([*(r.example for r in PUSH_RULES), LITERAL,
                                         f"pw is {SHORT_LITERAL} ok", "ticket XY-12345"]))
                parts.append("\n")
        rel = f"skills/s{index:03}/SKILL.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts))
        files.append((rel, str(path), path.stat().st_size))
    (root / "img.png").write_bytes(b"\x89PNG\0" + LITERAL.encode())  # binary: skipped
    files.append(("img.png", str(root / "img.png"), 10))
    return files


def _scanner() -> Scanner:
    allowed = fingerprint("skills/s001/SKILL.md", "literal-secret", LITERAL)
    return Scanner([LITERAL, SHORT_LITERAL], user_rules([r"XY-\d{5}"]), [allowed])


def test_pool_finds_what_the_serial_scan_finds(tmp_path: Path) -> None:
    files = _corpus(tmp_path)
    files.append(("gone.md", str(tmp_path / "gone.md"), 5))  # vanished before the scan
    scanner = _scanner()
    serial = {}
    for rel, location, _size in files[:-1]:
        with open(location, "rb") as handle:
            serial[rel] = scanner.scan_stream(rel, handle)
    pooled = pool.scan_in_pool(scanner, files, 2)
    assert pooled is not None and pooled.pop("gone.md") is None
    assert pooled == serial
    found = [finding for findings in serial.values() for finding in findings]
    rules = {finding.rule for finding in found}
    assert {"literal-secret", "user-pattern-1"} <= rules and len(found) > 50


def test_shares_are_balanced_and_cover_every_file() -> None:
    files = [(f"f{i}", f"/x/f{i}", size) for i, size in enumerate([90, 50, 40, 30, 20, 10, 5])]
    parts = pool.shares(files, 2)
    assert sorted(rel for part in parts for rel, _ in part) == sorted(f[0] for f in files)
    sizes = dict((rel, size) for rel, _, size in files)
    loads = [sum(sizes[rel] for rel, _ in part) for part in parts]
    assert max(loads) - min(loads) <= 10, loads


def test_small_or_busy_machines_stay_serial(monkeypatch) -> None:
    monkeypatch.setattr(pool, "busy_cores", lambda: 0.2)
    monkeypatch.setattr(pool, "usable_cores", lambda: 8)
    assert pool.worth_a_pool(pool.POOL_MIN_BYTES) == 0
    assert pool.worth_a_pool(10 * pool.POOL_MIN_BYTES) == pool.MAX_WORKERS
    monkeypatch.setattr(pool, "usable_cores", lambda: 1)
    assert pool.worth_a_pool(10 * pool.POOL_MIN_BYTES) == 0
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    assert pool.worth_a_pool(10 * pool.POOL_MIN_BYTES) == 2
    monkeypatch.setattr(pool, "busy_cores", lambda: 1.5)  # no idle core: no gain
    assert pool.worth_a_pool(10 * pool.POOL_MIN_BYTES) == 0


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _argv_and_environment(pids: set[int]) -> bytes:
    """The command lines and environments of `pids`, as one byte string."""
    seen = b""
    for pid in pids:
        for name in ("cmdline", "environ"):
            try:
                seen += Path(f"/proc/{pid}/{name}").read_bytes() + b"\n"
            except OSError:
                pass  # already gone
    return seen


def test_a_failed_worker_means_a_serial_scan(tmp_path: Path, monkeypatch) -> None:
    files = _corpus(tmp_path, 4)
    monkeypatch.setattr("sys.executable", "/bin/false")
    assert pool.scan_in_pool(_scanner(), files, 2) is None


def test_literals_never_in_a_workers_argv_or_environment(tmp_path: Path,
                                                          monkeypatch) -> None:
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", "ROAM_ARCHIVE_KEY")  # roam's own: not passed on
    # A FIFO holds a worker in its read until this test has looked at every process.
    fifo = tmp_path / "held.md"
    os.mkfifo(fifo)
    files = [("held.md", str(fifo), 1 << 30)]
    scanner = _scanner()
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(pool.scan_in_pool(scanner, files, 2)))
    thread.start()
    with open(fifo, "wb") as writer:  # returns once a worker has opened the FIFO
        workers = _descendants(os.getpid())
        seen = _argv_and_environment(workers)
        writer.write(f"value {LITERAL} and {SHORT_LITERAL}\n".encode())
    thread.join(60)
    assert workers and b"roam_core.secretscan.pool" in seen, "no worker seen: proves nothing"
    assert LITERAL.encode() not in seen and SHORT_LITERAL.encode() not in seen
    assert b"ROAM_ARCHIVE_KEY" not in seen
    # ...and yet the worker had them: it found both.
    assert sorted(f.rule for f in result["held.md"]) == ["literal-secret", "literal-secret"]
