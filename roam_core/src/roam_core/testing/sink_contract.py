"""`SinkContract`: the conformance suite every session sink subclasses.

A sink package's tests provide one fixture, `sink_harness`, returning a `SinkHarness`::

    class TestMySink(SinkContract):
        @pytest.fixture
        def sink_harness(self, tmp_path):
            return MyHarness(tmp_path)

The harness opens sink instances that share one destination and one state directory (a
second `open()` is the same configuration in a new process), reports what arrived, and can
make the destination fail. `sink_name` is the name the sink's entry point registers: the suite
loads the plugin through it, as roam does. `skip = {reason: [test names]}` documents what a
sink cannot do.
The contract: events of a session arrive in order; delivering an event again, from the same
instance or a new one, shows it once; failures surface only as `SinkError`s and never
break the next delivery; long text arrives whole; `fingerprint()` is stable and secret-free.
"""

from __future__ import annotations

import time
from typing import ClassVar, Protocol

import pytest

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.sink import Receipt, Sink, SinkError, SinkRetry


class SinkHarness(Protocol):
    """What a sink's test suite gives the contract."""

    #: Strings that must never appear in a fingerprint or an error (credentials used).
    secrets: tuple[str, ...]

    def open(self) -> Sink:
        """A new sink instance on the shared destination and state."""
        ...

    def arrivals(self) -> dict[str, list[str]]:
        """Texts that arrived, in order, by the destination's session (thread, folder…)."""
        ...

    def fail_next(self, count: int) -> None:
        """Make the destination fail the next `count` requests transiently."""
        ...

    def set_down(self, down: bool) -> None:
        """Make the destination unreachable (True) or reachable again (False)."""
        ...


def turn(session: str, number: int, reply: str | None = None,
         profile: str = "default") -> TurnEvent:
    """A redacted event with a unique marker `<session>-turn-<number>` in its message."""
    return make_live_event(
        session_id=session, turn_id=f"{number}", profile=profile,
        user_message=f"{session}-turn-{number} what next?",
        reply=reply if reply is not None else f"reply to {session}-turn-{number}",
        title=f"Session {session}", when=1_800_000_000.0 + number,
    ).with_text(redacted=True)


def _joined(harness: SinkHarness) -> dict[str, str]:
    return {key: "\n".join(texts) for key, texts in harness.arrivals().items()}


def _session_text(harness: SinkHarness, marker: str) -> str:
    holders = [text for text in _joined(harness).values() if marker in text]
    assert len(holders) == 1, f"{marker!r} arrived in {len(holders)} sessions"
    return holders[0]


class SinkContract:
    """The sink contract as tests. Subclass it and provide `sink_harness`."""

    skip: ClassVar[dict[str, list[str]]] = {}
    #: Longest a failing delivery may take before it raises (seconds).
    failure_bound: ClassVar[float] = 30.0
    #: The sink's name as its entry point registers it (a value of `mirror_sinks`).
    sink_name: ClassVar[str | None] = None

    @pytest.fixture
    def sink_harness(self) -> SinkHarness:
        raise NotImplementedError("subclasses provide a sink_harness fixture")

    @pytest.fixture(autouse=True)
    def _honour_skip(self, request: pytest.FixtureRequest) -> None:
        for reason, names in self.skip.items():
            if request.node.originalname in names:
                pytest.skip(reason)

    def test_the_sink_loads_through_its_entry_point(self) -> None:
        from roam_core.errors import PluginError
        from roam_core.manager import PluginManager

        if self.sink_name is None:
            pytest.fail("set `sink_name` to the name the sink's entry point registers "
                        "(or list this test in `skip` with the reason)")
        try:
            PluginManager().sink(self.sink_name)
        except PluginError as error:
            pytest.fail(f"the plugin does not load through its entry point: {error}")

    def _deliver(self, sink: Sink, event: TurnEvent) -> Receipt:
        receipt = sink.deliver(event)
        assert isinstance(receipt, Receipt)
        assert receipt.event_id == event.event_id
        return receipt

    # -- order and idempotency -------------------------------------------------------------

    def test_delivers_in_order_per_session(self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        for number in range(4):
            for session in ("alpha", "beta", "gamma"):
                self._deliver(sink, turn(session, number))
        for session in ("alpha", "beta", "gamma"):
            text = _session_text(sink_harness, f"{session}-turn-0")
            places = [text.find(f"{session}-turn-{n} ") for n in range(4)]
            assert all(place >= 0 for place in places), places
            assert places == sorted(places)
            other = {"alpha", "beta", "gamma"} - {session}
            assert not any(f"{name}-turn-" in text for name in other)
        sink.close()

    def test_redelivery_is_idempotent(self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        event = turn("delta", 1)
        first = self._deliver(sink, event)
        again = self._deliver(sink, event)
        assert again.event_id == first.event_id
        assert _session_text(sink_harness, "delta-turn-1").count("delta-turn-1 ") == 1
        sink.close()

    def test_redelivery_from_a_new_instance_is_idempotent(
            self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        self._deliver(sink, turn("eps", 1))
        sink.close()
        restarted = sink_harness.open()
        self._deliver(restarted, turn("eps", 1))
        self._deliver(restarted, turn("eps", 2))
        text = _session_text(sink_harness, "eps-turn-1")
        assert text.count("eps-turn-1 ") == 1
        assert text.find("eps-turn-1 ") < text.find("eps-turn-2 ")
        restarted.close()

    def test_profiles_keep_sessions_apart(self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        self._deliver(sink, turn("same", 1, profile="default"))
        self._deliver(sink, turn("same", 2, profile="work"))
        holders = [t for t in _joined(sink_harness).values() if "same-turn-" in t]
        assert len(holders) == 2
        sink.close()

    # -- failures --------------------------------------------------------------------------

    def test_transient_failure_raises_sink_retry_then_delivers_once(
            self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        self._deliver(sink, turn("zeta", 0))
        sink_harness.fail_next(50)
        started = time.monotonic()
        with pytest.raises(SinkRetry):
            sink.deliver(turn("zeta", 1))
        assert time.monotonic() - started < self.failure_bound
        sink_harness.fail_next(0)
        self._deliver(sink, turn("zeta", 1))
        self._deliver(sink, turn("zeta", 1))
        assert _session_text(sink_harness, "zeta-turn-1").count("zeta-turn-1 ") == 1
        sink.close()

    def test_outage_surfaces_only_sink_errors(self, sink_harness: SinkHarness) -> None:
        sink = sink_harness.open()
        sink_harness.set_down(True)
        started = time.monotonic()
        try:
            with pytest.raises(SinkError):
                sink.deliver(turn("eta", 1))
            assert time.monotonic() - started < self.failure_bound
        finally:
            sink_harness.set_down(False)
        self._deliver(sink, turn("eta", 1))
        assert _session_text(sink_harness, "eta-turn-1").count("eta-turn-1 ") == 1
        sink.close()

    # -- content ---------------------------------------------------------------------------

    def test_long_text_arrives_whole(self, sink_harness: SinkHarness) -> None:
        lines = [f"line {n:04d} ünïcödé 🙂 — naïve café" for n in range(400)]
        sink = sink_harness.open()
        self._deliver(sink, turn("theta", 1, reply="\n".join(lines)))
        text = _session_text(sink_harness, "theta-turn-1")
        for line in lines:
            assert line in text
        sink.close()

    def test_fingerprint_is_stable_and_secret_free(self, sink_harness: SinkHarness) -> None:
        first, second = sink_harness.open(), sink_harness.open()
        assert first.fingerprint() == second.fingerprint()
        for secret in getattr(sink_harness, "secrets", ()):
            assert secret not in first.fingerprint()
        first.close()
        second.close()
