"""The seal and store stages: bounded by bytes, failures stop the caller, stores overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from roam_core import crypto
from roam_core.storage import GuardedBackend
from roam_core.store.gate import UploadGate
from roam_core.store.packer import HELD_PACK_BYTES, LOCAL_PACK_BYTES, REMOTE_PACK_BYTES, Packer
from roam_core.store.pipeline import PackStages
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(bytes(range(32)))


class Gate:
    """Stores that wait for `release`; counts how many are waiting at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.waiting = 0
        self.peak = 0
        self.stored: list[int] = []
        self.arrived = threading.Condition(self.lock)

    def job(self, number: int, sealed: int) -> Callable[[], tuple[Callable[[], None], int]]:
        def store() -> None:
            with self.arrived:
                self.waiting += 1
                self.peak = max(self.peak, self.waiting)
                self.arrived.notify_all()
            self.release.wait()
            with self.lock:
                self.waiting -= 1
                self.stored.append(number)

        return lambda: (store, sealed)

    def until_waiting(self, count: int) -> bool:
        """Whether `count` stores came to wait (a generous bound: a failure, not a hang)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: self.waiting >= count, timeout=60)


def test_stores_overlap_and_the_caller_waits_while_the_budget_is_spent() -> None:
    stages = PackStages(sealers=2, storers=4, budget=300)
    gate = Gate()
    for number in range(3):  # 3 × 100 bytes: the whole budget
        stages.submit(gate.job(number, 100), 100)
    assert gate.until_waiting(3)  # three stores travel at once, none finished

    fourth = threading.Thread(target=stages.submit, args=(gate.job(3, 100), 100))
    fourth.start()
    fourth.join(0.3)
    assert fourth.is_alive(), "a pack was taken beyond the byte budget"
    gate.release.set()
    fourth.join()
    stages.wait()
    stages.close()
    assert sorted(gate.stored) == [0, 1, 2, 3]
    assert gate.peak == 3


def test_while_holding_the_stages_take_packs_only_up_to_the_held_budget() -> None:
    # before the scan's verdict every pack waits at the gate: the push's peak was those
    holding = threading.Event()
    holding.set()
    stages = PackStages(sealers=2, storers=4, budget=300)
    stages.holding, stages.held_budget = holding.is_set, 100
    held = Gate()
    stages.submit(held.job(0, 100), 100)
    assert held.until_waiting(1)
    second = threading.Thread(target=stages.submit, args=(held.job(1, 100), 100))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "a pack was taken beyond the held budget"
    holding.clear()  # the verdict: the held packs are stored, the whole budget is back
    held.release.set()
    second.join()
    stages.wait()
    free = Gate()
    for number in range(3):
        stages.submit(free.job(number, 100), 100)
    assert free.until_waiting(3)
    free.release.set()
    stages.wait()
    stages.close()


def test_sealed_bytes_replace_the_raw_ones_in_the_budget() -> None:
    # packs that compress to a tenth leave room for more of them while they travel
    stages = PackStages(sealers=1, storers=8, budget=300)
    gate = Gate()
    submitter = threading.Thread(target=lambda: [stages.submit(gate.job(number, 10), 100)
                                                 for number in range(6)])
    submitter.start()
    reached = gate.until_waiting(6)
    gate.release.set()
    submitter.join()
    assert reached, "sealed packs were counted at their raw size"
    stages.wait()
    stages.close()


def test_a_failed_store_stops_the_next_hand_over_and_is_raised_by_wait() -> None:
    stages = PackStages(sealers=2, storers=2, budget=100)

    def broken() -> None:
        raise OSError("the store went away")

    stages.submit(lambda: (broken, 50), 50)
    with pytest.raises(OSError, match="went away"):
        while True:  # the budget holds two: a hand-over soon waits for the failure
            stages.submit(lambda: (lambda: None, 50), 50)
    with pytest.raises(OSError, match="went away"):
        stages.wait()
    stages.close()


def test_no_threads_runs_each_pack_in_the_caller() -> None:
    stages = PackStages(sealers=0, storers=4, budget=10)
    seen: list[str] = []
    stages.submit(lambda: (lambda: seen.append(threading.current_thread().name), 500), 500)
    assert seen == [threading.current_thread().name]
    stages.wait()
    stages.close()


@pytest.mark.parametrize(("remote", "held"), [(False, HELD_PACK_BYTES),
                                              (True, REMOTE_PACK_BYTES)])
def test_a_push_holds_less_until_its_scan_passes_unless_its_store_is_remote(
        remote: bool, held: int) -> None:
    backend = MemoryBackend()
    backend.capabilities = replace(backend.capabilities, remote=remote)
    gate = UploadGate()
    packer = Packer(Repository(GuardedBackend(backend), KEYS, None), {}, gate=gate)
    assert packer._stages._limit() == held
    gate.open()
    assert packer._stages._limit() == (REMOTE_PACK_BYTES if remote else LOCAL_PACK_BYTES)
    packer.finish()


def test_a_sealed_pack_hands_its_freed_memory_back_before_it_is_stored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # its raw chunks and sealed pieces are free once it is sealed; a store may wait long
    # (at the scan's gate here), and the pages must not wait with it
    trims: list[str] = []
    monkeypatch.setattr("roam_core.store.packer.release_free_memory",
                        lambda: trims.append(threading.current_thread().name))
    gate = UploadGate()
    packer = Packer(Repository(GuardedBackend(MemoryBackend()), KEYS, None), {}, gate=gate)
    packer.pack_target = 64 * 1024
    for number in range(3):
        packer.add_chunk(bytes([number]) * 48 * 1024)  # 48 KiB each: a pack each
    packer.seal_all()  # every pack sealed; none stored, the gate is undecided
    assert len(trims) >= 2
    gate.open()
    packer.finish()
