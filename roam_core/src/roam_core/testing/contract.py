"""`BackendContract`: the conformance suite every storage backend subclasses.

A backend package's tests are a few lines::

    class TestMyBackend(BackendContract):
        @pytest.fixture
        def backend_factory(self, tmp_path):
            return lambda: MyBackend(tmp_path / "remote")

`backend_factory` returns a callable that opens a new instance on one fresh remote (one
call per "device"); every test gets a fresh remote. `backend_name` is the name the
backend's entry point registers: the suite loads the plugin through it, as roam does, so a
plugin module that fails to import fails the suite. `skip = {reason: [test names]}`
documents what a backend cannot do. Capabilities (`batched_publish`, `max_object_size`)
are read from the backend, never guessed. The ref race runs both in threads and in
separate processes over several rounds (forked children call `backend_factory` again).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from roam_core import deadline as _deadline
from roam_core.errors import (
    BackendError,
    DeadlineExceeded,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
)
from roam_core.storage import Backend, GuardedBackend

BackendFactory = Callable[[], Backend]


def _publish(backend: Backend) -> None:
    """Make pending objects visible to other instances (a no-op unless batched)."""
    if backend.capabilities.batched_publish:
        current = backend.read_ref("HEAD")
        backend.swap_ref("HEAD", b"publish", None if current is None else current[1])


def _race_child(factory: BackendFactory, barrier: Any, results: Any, value: str,
                version: str) -> None:
    """One racing process: open a backend, wait for the others, try to move the ref once."""
    try:
        backend = factory()
        barrier.wait(60)
        backend.swap_ref("HEAD", value.encode(), version)
        results.put(("won", value))
    except RefConflict:
        results.put(("lost", value))
    except BaseException as error:
        results.put(("error", f"{type(error).__name__}: {error}"))
    finally:
        results.close()
        results.join_thread()  # flush the queue's feeder thread before leaving without cleanup
        os._exit(0)


class BackendContract:
    """The storage contract as tests. Subclass it and provide `backend_factory`."""

    #: {reason: [test names]} for duties this backend documents it cannot meet.
    skip: ClassVar[dict[str, list[str]]] = {}
    #: Strings that must never appear in `identity()` (credentials the fixture used).
    secrets: ClassVar[tuple[str, ...]] = ()
    #: Threads racing on the ref; remote backends may lower it to keep tests quick.
    race_threads: ClassVar[int] = 8
    #: Size of the "large object" test, capped by the backend's `max_object_size`.
    large_size: ClassVar[int] = 12 * 1024 * 1024
    #: The backend's name as its entry point registers it (the `backend:` setting's value).
    backend_name: ClassVar[str | None] = None
    #: Processes racing on the ref in each round, and how many rounds.
    race_processes: ClassVar[int] = 6
    race_rounds: ClassVar[int] = 3

    @pytest.fixture
    def backend_factory(self) -> BackendFactory:
        raise NotImplementedError("subclasses provide a backend_factory fixture")

    @pytest.fixture
    def backend(self, backend_factory: BackendFactory) -> Iterator[Backend]:
        instance = backend_factory()
        yield instance
        instance.close()

    @pytest.fixture(autouse=True)
    def _honour_skip(self, request: pytest.FixtureRequest) -> None:
        for reason, names in self.skip.items():
            if request.node.originalname in names:
                pytest.skip(reason)

    # -- objects -------------------------------------------------------------------------

    def test_put_then_get_round_trips(self, backend: Backend) -> None:
        backend.put_new("data/ab/abcdef", b"hello")
        assert backend.get("data/ab/abcdef") == b"hello"

    def test_every_byte_value_round_trips(self, backend: Backend) -> None:
        payload = bytes(range(256)) * 17
        backend.put_new("data/bytes", payload)
        assert backend.get("data/bytes") == payload

    def test_empty_object_round_trips(self, backend: Backend) -> None:
        backend.put_new("data/empty", b"")
        assert backend.get("data/empty") == b""

    def test_put_new_refuses_existing_key_and_keeps_original(self, backend: Backend) -> None:
        backend.put_new("data/once", b"first")
        with pytest.raises(ObjectExists):
            backend.put_new("data/once", b"second")
        assert backend.get("data/once") == b"first"

    def test_get_missing_raises_object_not_found(self, backend: Backend) -> None:
        with pytest.raises(ObjectNotFound):
            backend.get("data/missing")

    def test_exists(self, backend: Backend) -> None:
        assert not backend.exists("data/x")
        backend.put_new("data/x", b"1")
        assert backend.exists("data/x")

    def test_ranged_get(self, backend: Backend) -> None:
        payload = bytes(range(200))
        backend.put_new("packs/p1", payload)
        assert backend.get("packs/p1", 10, 5) == payload[10:15]
        assert backend.get("packs/p1", 190) == payload[190:]
        assert backend.get("packs/p1", 195, 50) == payload[195:]
        assert backend.get("packs/p1", 0, 0) == b""

    def test_ranged_get_past_end_is_empty(self, backend: Backend) -> None:
        backend.put_new("packs/p2", b"abc")
        assert backend.get("packs/p2", 3) == b""
        assert backend.get("packs/p2", 10, 4) == b""

    def test_large_object_round_trips_and_reads_a_range(self, backend: Backend) -> None:
        size = self.large_size
        limit = backend.capabilities.max_object_size
        if limit is not None:
            size = min(size, limit)
        payload = os.urandom(size)
        backend.put_new("packs/large", payload)
        middle = size // 2
        assert backend.get("packs/large", middle, 4096) == payload[middle : middle + 4096]
        assert backend.get("packs/large") == payload

    def test_concurrent_put_new_has_one_winner(self, backend_factory: BackendFactory) -> None:
        instances = [backend_factory() for _ in range(4)]
        outcomes: list[str] = []
        barrier = threading.Barrier(len(instances))

        def attempt(index: int) -> None:
            barrier.wait()
            try:
                instances[index].put_new("data/raced", f"writer-{index}".encode())
                outcomes.append("won")
            except ObjectExists:
                outcomes.append("exists")

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(instances))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        if instances[0].capabilities.batched_publish:
            # Staged locally: each writer may win locally; publication decides (ref CAS).
            assert outcomes.count("won") >= 1
        else:
            assert outcomes.count("won") == 1, outcomes

    # -- deletion (prune, key rotation) -------------------------------------------------

    @pytest.fixture
    def deleting(self, backend: Backend) -> Backend:
        if not backend.capabilities.deletes:
            pytest.skip("the backend does not declare `deletes`")
        return backend

    def test_delete_is_done_or_refused_as_declared(self, backend: Backend) -> None:
        backend.put_new("data/kept", b"x")
        guarded = GuardedBackend(backend)
        if backend.capabilities.deletes:
            guarded.delete(["data/kept"])
            assert not backend.exists("data/kept")
        else:
            with pytest.raises(BackendError, match="cannot delete"):
                guarded.delete(["data/kept"])
            assert backend.get("data/kept") == b"x"

    def test_delete_removes_objects_and_is_idempotent(self, deleting: Backend) -> None:
        for name in ("a", "b", "c"):
            deleting.put_new(f"data/{name}", name.encode())
        deleting.delete(iter(["data/a", "data/b", "data/never-there"]))
        deleting.delete(["data/a"])
        assert not deleting.exists("data/a")
        with pytest.raises(ObjectNotFound):
            deleting.get("data/b")
        assert deleting.get("data/c") == b"c"
        assert list(deleting.list("data/")) == ["data/c"]

    def test_delete_leaves_the_ref_and_a_key_can_be_created_again(
        self, deleting: Backend
    ) -> None:
        deleting.put_new("data/again", b"first")
        version = deleting.swap_ref("HEAD", b"head", None)
        deleting.delete(["data/again"])
        deleting.put_new("data/again", b"second")
        assert deleting.get("data/again") == b"second"
        assert deleting.read_ref("HEAD") == (b"head", version)

    def test_deleted_objects_are_gone_for_other_instances(
        self, backend_factory: BackendFactory
    ) -> None:
        writer = backend_factory()
        if not writer.capabilities.deletes:
            pytest.skip("the backend does not declare `deletes`")
        keys = [f"packs/{index:03d}" for index in range(30)]
        for key in keys:
            writer.put_new(key, key.encode())
        _publish(writer)
        writer.delete(keys[:20])
        _publish(writer)
        reader = backend_factory()
        assert sorted(reader.list("packs/")) == keys[20:]
        assert not reader.exists(keys[0])

    # -- listing -------------------------------------------------------------------------

    def test_list_on_empty_store_is_empty(self, backend: Backend) -> None:
        assert list(backend.list("data/")) == []

    def test_list_yields_each_key_once_under_prefix(self, backend: Backend) -> None:
        wanted = {f"data/{i % 7:02x}/{i:04d}" for i in range(23)}
        for key in sorted(wanted):
            backend.put_new(key, b"x")
        backend.put_new("snapshots/s1", b"y")
        listed = list(backend.list("data/"))
        assert len(listed) == len(set(listed)), "list must yield each key exactly once"
        assert set(listed) == wanted
        assert set(backend.list("")) >= wanted | {"snapshots/s1"}
        assert list(backend.list("nothing-here/")) == []

    def test_list_pages_through_many_keys(self, backend: Backend) -> None:
        wanted = {f"index/{i:05d}" for i in range(1100)}
        for key in wanted:
            backend.put_new(key, b"")
        listed = list(backend.list("index/"))
        assert len(listed) == len(wanted) and set(listed) == wanted

    # -- keys ----------------------------------------------------------------------------

    @pytest.mark.parametrize(
        "key",
        ["data/with space", "data/../escape", "/absolute", "data//double", "data/ünï",
         "data/new\nline", "data/back\\slash", "data/.hidden", ""],
    )
    def test_odd_keys_are_rejected_or_round_trip(self, backend: Backend, key: str) -> None:
        try:
            backend.put_new(key, b"odd")
        except BackendError:
            with pytest.raises(BackendError):
                GuardedBackend(backend).put_new(key, b"odd")
            return
        assert backend.get(key) == b"odd"

    def test_guarded_backend_rejects_odd_keys(self, backend: Backend) -> None:
        with pytest.raises(BackendError):
            GuardedBackend(backend).put_new("../escape", b"x")

    # -- the ref -------------------------------------------------------------------------

    def test_read_ref_missing_is_none(self, backend: Backend) -> None:
        assert backend.read_ref("HEAD") is None

    def test_swap_ref_create_then_read(self, backend: Backend) -> None:
        version = backend.swap_ref("HEAD", b"gen-1", None)
        found = backend.read_ref("HEAD")
        assert found is not None
        assert found == (b"gen-1", version)

    def test_swap_ref_create_twice_conflicts(self, backend: Backend) -> None:
        backend.swap_ref("HEAD", b"gen-1", None)
        with pytest.raises(RefConflict):
            backend.swap_ref("HEAD", b"gen-other", None)
        assert backend.read_ref("HEAD")[0] == b"gen-1"  # type: ignore[index]

    def test_swap_ref_moves_and_changes_version(self, backend: Backend) -> None:
        first = backend.swap_ref("HEAD", b"gen-1", None)
        second = backend.swap_ref("HEAD", b"gen-2", first)
        assert second != first
        assert backend.read_ref("HEAD") == (b"gen-2", second)

    def test_swap_ref_with_stale_version_conflicts_and_keeps_winner(
        self, backend: Backend
    ) -> None:
        first = backend.swap_ref("HEAD", b"gen-1", None)
        second = backend.swap_ref("HEAD", b"gen-2", first)
        with pytest.raises(RefConflict):
            backend.swap_ref("HEAD", b"stale", first)
        assert backend.read_ref("HEAD") == (b"gen-2", second)

    def test_swap_ref_with_made_up_version_conflicts(self, backend: Backend) -> None:
        backend.swap_ref("HEAD", b"gen-1", None)
        with pytest.raises(RefConflict):
            backend.swap_ref("HEAD", b"x", "not-a-real-version")

    def test_ref_seen_by_another_instance(self, backend_factory: BackendFactory) -> None:
        writer, reader = backend_factory(), backend_factory()
        writer.put_new("snapshots/s1", b"snap")
        version = writer.swap_ref("HEAD", b"gen-1", None)
        assert reader.read_ref("HEAD") == (b"gen-1", version)
        assert reader.get("snapshots/s1") == b"snap"
        with pytest.raises(RefConflict):
            reader.swap_ref("HEAD", b"x", None)

    def test_objects_visible_to_others_after_publish(
        self, backend_factory: BackendFactory
    ) -> None:
        writer, reader = backend_factory(), backend_factory()
        writer.put_new("packs/visible", b"pack")
        assert writer.get("packs/visible") == b"pack"
        _publish(writer)
        assert reader.get("packs/visible") == b"pack"
        assert "packs/visible" in set(reader.list("packs/"))

    def test_flush_keeps_every_object_and_may_be_repeated(
        self, backend_factory: BackendFactory
    ) -> None:
        writer = backend_factory()
        writer.put_new("packs/flushed", b"pack")
        writer.flush()
        writer.flush()
        writer.put_new("indexes/after", b"index")
        _publish(writer)
        reader = backend_factory()
        assert reader.get("packs/flushed") == b"pack"
        assert reader.get("indexes/after") == b"index"

    def test_ref_race_has_exactly_one_winner(self, backend_factory: BackendFactory) -> None:
        setup = backend_factory()
        base = setup.swap_ref("HEAD", b"base", None)
        instances = [backend_factory() for _ in range(self.race_threads)]
        for instance in instances:
            assert instance.read_ref("HEAD") == (b"base", base)
        barrier = threading.Barrier(len(instances))
        winners: list[int] = []
        losers: list[int] = []
        errors: list[BaseException] = []

        def attempt(index: int) -> None:
            barrier.wait()
            try:
                instances[index].swap_ref("HEAD", f"winner-{index}".encode(), base)
                winners.append(index)
            except RefConflict:
                losers.append(index)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(instances))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        assert len(winners) == 1, f"winners={winners} losers={losers}"
        final = backend_factory().read_ref("HEAD")
        assert final is not None and final[0] == f"winner-{winners[0]}".encode()

    def test_ref_race_across_processes_has_one_winner_each_round(
        self, backend_factory: BackendFactory
    ) -> None:
        context = multiprocessing.get_context("fork")
        setup = backend_factory()
        version = setup.swap_ref("HEAD", b"round-0", None)
        for round_number in range(1, self.race_rounds + 1):
            barrier = context.Barrier(self.race_processes)
            results = context.Queue()
            children = [
                context.Process(target=_race_child, args=(
                    backend_factory, barrier, results, f"round-{round_number}-{index}", version))
                for index in range(self.race_processes)]
            for child in children:
                child.start()
            outcomes = [results.get(timeout=180) for _ in children]
            for child in children:
                child.join(60)
            errors = [outcome for outcome in outcomes if outcome[0] == "error"]
            assert not errors, errors
            winners = [value for outcome, value in outcomes if outcome == "won"]
            assert len(winners) == 1, f"round {round_number}: {outcomes}"
            current = backend_factory().read_ref("HEAD")
            assert current is not None and current[0] == winners[0].encode(), (current, winners)
            version = current[1]

    # -- the plugin, as roam loads it --------------------------------------------------------

    def test_the_backend_loads_through_its_entry_point(self) -> None:
        from roam_core.errors import PluginError
        from roam_core.manager import PluginManager

        if self.backend_name is None:
            pytest.fail("set `backend_name` to the name the backend's entry point registers "
                        "(or list this test in `skip` with the reason)")
        try:
            PluginManager().backend(self.backend_name)
        except PluginError as error:
            pytest.fail(f"the plugin does not load through its entry point: {error}")

    # -- identity, ping, deadline ----------------------------------------------------------

    def test_identity_is_stable_and_has_no_secrets(
        self, backend_factory: BackendFactory
    ) -> None:
        first, second = backend_factory(), backend_factory()
        assert first.identity() == second.identity()
        assert first.identity()
        for secret in self.secrets:
            assert secret not in first.identity()

    def test_ping_succeeds(self, backend: Backend) -> None:
        backend.ping()

    def test_expired_deadline_stops_calls_quickly(self, backend: Backend) -> None:
        guarded = GuardedBackend(backend)
        started = time.monotonic()
        with _deadline.running(_deadline.Deadline.after(-1, "test")):
            with pytest.raises(DeadlineExceeded):
                guarded.get("data/anything")
            with pytest.raises(DeadlineExceeded):
                guarded.swap_ref("HEAD", b"x", None)
        assert time.monotonic() - started < 5
        assert backend.read_ref("HEAD") is None
