"""The seal and store stages: bounded by bytes, failures stop the caller, stores overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from roam_core.store.pipeline import PackStages


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
