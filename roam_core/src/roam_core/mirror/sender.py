"""The background sender: drains the spool to every enabled sink and records deliveries.

One drainer per root home at a time (`sender.lock`), so a gateway, a CLI session and
`roam mirror flush` never post the same turn twice. Per sink, events go in spool order and
one session's events never overtake each other; a failing sink backs off (exponentially,
or as long as the destination asked) without holding up the others, a refused configuration
stops until its settings or credentials change, and an event the destination rejects is set
aside after a few tries. Nothing here runs on the agent's thread.
"""

from __future__ import annotations

import atexit
import contextvars
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roam_core.errors import RoamError
from roam_core.mirror.config import enabled_sinks, settings_for
from roam_core.mirror.events import TurnEvent
from roam_core.mirror.redact import RedactionUnavailable, last_look, redact_event
from roam_core.mirror.sink import SessionRetry, Sink, SinkRejected, SinkRetry, SinkTerminal
from roam_core.mirror.spool import Spool

log = logging.getLogger(__name__)

MAX_BACKOFF = 300.0
HELD_RETRY = 60.0
REJECT_AFTER = 3
POLL_SECONDS = 10.0
#: At interpreter exit the sender may finish a pass only until this long after the last
#: turn this process spooled (the turn is durable already; the rest waits in the spool).
EXIT_GRACE_SECONDS = 0.4

SinkLoader = Callable[[str, Mapping[str, Any], Path], Sink]


def load_sink(name: str, settings: Mapping[str, Any], root: Path) -> Sink:
    """Build the sink `name` through the plugin manager (raises `PluginError` if missing)."""
    from roam_core.home import STATE_DIRNAME
    from roam_core.manager import get_manager
    from roam_core.secrets import reader
    from roam_core.types import PluginContext

    plugin = get_manager().sink(name)
    context = PluginContext(home=root, state_dir=root / STATE_DIRNAME, secret=reader(root))
    return plugin.factory(settings, context)


@dataclass
class DrainResult:
    """What one pass delivered and what stopped it."""

    delivered: int = 0
    held: int = 0
    busy: bool = False
    errors: dict[str, str] = field(default_factory=dict)


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return text if isinstance(error, RoamError) else f"{type(error).__name__}: {text}"[:300]


class Sender:
    """Drains one root home's spool. `drain_once` is safe to call from any process."""

    def __init__(self, root: Path, loader: SinkLoader | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self.spool = Spool(root)
        self.loader = loader or load_sink
        self.clock = clock
        self.stop = threading.Event()
        self._sinks: dict[str, tuple[str, Sink]] = {}

    # -- sinks ---------------------------------------------------------------------------

    def _sink(self, name: str, settings: Mapping[str, Any]) -> Sink:
        key = repr(sorted((k, repr(v)) for k, v in settings.items()))
        cached = self._sinks.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        if cached is not None:
            self._close(cached[1])
        sink = self.loader(name, settings, self.root)
        self._sinks[name] = (key, sink)
        return sink

    @staticmethod
    def _close(sink: Sink) -> None:
        try:
            sink.close()
        except Exception as error:  # a sink's cleanup must not stop the sender
            log.debug("roam mirror: closing a sink failed: %s", error)

    def close(self) -> None:
        for _key, sink in self._sinks.values():
            self._close(sink)
        self._sinks.clear()

    # -- one pass ------------------------------------------------------------------------

    def drain_once(self, force: bool = False) -> DrainResult:
        """Deliver what is pending; `force` ignores backoff and terminal marks (flush)."""
        result = DrainResult()
        self.spool.sync_events()
        with self.spool.sender_lock() as acquired:
            if not acquired:
                result.busy = True
                return result
            state = self.spool.read_state()
            before = json.dumps(state, sort_keys=True)
            try:
                settings = settings_for(self.root)
                names = enabled_sinks(settings)
            except RoamError as error:
                state["error"] = _describe(error)
                self.spool.write_state(state)
                result.errors["settings"] = state["error"]
                return result
            state.pop("error", None)
            if names:
                self._redact_pending(state, result, force)
                for name in names:
                    if self.stop.is_set():
                        break
                    self._drain_sink(name, settings, state, result, force)
            if json.dumps(state, sort_keys=True) != before:  # an idle poll writes nothing
                self.spool.write_state(state)
            if names and not result.errors:
                self.spool.compact(names)
        return result

    def _redact_pending(self, state: dict[str, Any], result: DrainResult, force: bool) -> None:
        held: dict[str, str] = state.setdefault("held", {})
        if not force and self.clock() < float(state.get("held_retry_at", 0)):
            result.held = len(held)
            return
        raw = [event for event in self.spool.events() if not event.redacted]
        fixed: list[TurnEvent] = []
        for event in raw:
            try:
                fixed.append(redact_event(event, self.root))
                held.pop(event.event_id, None)
            except RedactionUnavailable as error:
                held[event.event_id] = str(error)
        if fixed:
            self.spool.append_many(fixed)
        result.held = len(held)
        if held:
            state["held_retry_at"] = self.clock() + HELD_RETRY
            log.warning("roam mirror: %d turn(s) held unsent: %s", len(held),
                        next(iter(held.values())))

    def _drain_sink(self, name: str, settings: Mapping[str, Any], state: dict[str, Any],
                    result: DrainResult, force: bool) -> None:
        sinks: dict[str, Any] = state.setdefault("sinks", {})
        record: dict[str, Any] = sinks.setdefault(name, {})
        now = self.clock()
        if not force and now < float(record.get("backoff_until", 0)):
            result.errors[name] = str(record.get("last_error", "backing off"))
            return
        asked = float(record.get("asked_until", 0) or 0)
        if now < asked:  # the destination's own wait (a rate limit): even a flush honours it
            result.errors[name] = (f"{record.get('last_error') or 'rate limited'}; the "
                                   f"destination asked to wait {asked - now:.0f}s more")
            return
        try:
            sink = self._sink(name, settings)
            fingerprint = sink.fingerprint()
        except Exception as error:
            self._failed(record, name, error, None, result)
            return
        terminal = record.get("terminal")
        if terminal and terminal.get("fingerprint") == fingerprint and not force:
            result.errors[name] = str(terminal.get("reason"))
            return
        record.pop("terminal", None)
        rejected: dict[str, Any] = record.setdefault("rejected", {})
        attempts: dict[str, int] = record.setdefault("attempts", {})
        done = self.spool.delivered(name)
        blocked: set[str] = set()
        pending = [e for e in self.spool.events()
                   if e.redacted and e.event_id not in done and e.event_id not in rejected]
        for event in pending:
            if self.stop.is_set():
                break
            if event.session_key in blocked:
                continue
            try:
                receipt = sink.deliver(last_look(self._titled(event), self.root))
            except SinkTerminal as error:
                record["terminal"] = {"fingerprint": fingerprint, "reason": _describe(error),
                                      "at": self.clock()}
                self._failed(record, name, error, None, result)
                log.warning("roam mirror: %s stopped: %s", name, _describe(error))
                return
            except SinkRejected as error:
                attempts[event.event_id] = attempts.get(event.event_id, 0) + 1
                if attempts[event.event_id] >= REJECT_AFTER:
                    # Given up, never silently: `mirror status` lists it, `retry` resends.
                    rejected[event.event_id] = {"reason": _describe(error), "at": self.clock(),
                                                "session": event.session_key}
                    attempts.pop(event.event_id, None)
                    log.warning("roam mirror: %s gave up on a turn of %s: %s", name,
                                event.session_key, _describe(error))
                else:
                    blocked.add(event.session_key)
                record["last_error"] = _describe(error)
                record["last_error_at"] = self.clock()
                continue
            except SessionRetry as error:  # only this session waits
                blocked.add(event.session_key)
                record["last_error"] = _describe(error)
                record["last_error_at"] = self.clock()
                continue
            except Exception as error:  # SinkRetry, or a sink's bug: isolate and retry later
                after = error.retry_after if isinstance(error, SinkRetry) else None
                self._failed(record, name, error, after, result)
                return
            self.spool.record_delivery(receipt)
            attempts.pop(event.event_id, None)
            record["failures"] = 0
            record["backoff_until"] = 0
            record["last_delivery_at"] = self.clock()
            if not blocked:  # a success clears a stale error (not one met in this pass)
                record.pop("last_error", None)
                record.pop("last_error_at", None)
            result.delivered += 1

    def _titled(self, event: TurnEvent) -> TurnEvent:
        """Fill a missing title from state.db (Hermes names sessions after the first turn)."""
        if event.title:
            return event
        from roam_core.home import Home
        from roam_core.mirror.redact import literal_secrets, redact_text
        from roam_core.mirror.statedb import profile_home, session_meta

        title, _source = session_meta(profile_home(Home(self.root, event.profile)),
                                      event.session_id, timeout=0.5)
        if not title:
            return event
        try:
            return event.with_text(
                title=redact_text(title, literal_secrets(self.root, event.profile)))
        except RedactionUnavailable:
            return event

    def _failed(self, record: dict[str, Any], name: str, error: BaseException,
                retry_after: float | None, result: DrainResult) -> None:
        failures = int(record.get("failures", 0)) + 1
        delay = min(MAX_BACKOFF, 2.0 ** min(failures, 9))
        if retry_after is not None:  # the destination's word, but never a busy loop
            delay = max(retry_after, delay)
        record["failures"] = failures
        record["backoff_until"] = self.clock() + delay
        if retry_after:
            record["asked_until"] = self.clock() + retry_after
        record["last_error"] = _describe(error)
        record["last_error_at"] = self.clock()
        result.errors[name] = record["last_error"]
        if not isinstance(error, RoamError):
            log.warning("roam mirror: sink %s failed unexpectedly: %s", name, _describe(error))
        else:
            log.info("roam mirror: %s: %s (retry in %.0fs)", name, _describe(error), delay)

    def next_wake(self) -> float:
        """Seconds until the earliest backoff or held retry ends (capped at the poll)."""
        state = self.spool.read_state()
        now = self.clock()
        times = [float(r.get("backoff_until", 0)) for r in state.get("sinks", {}).values()
                 if not r.get("terminal")]
        if state.get("held"):
            times.append(float(state.get("held_retry_at", 0)))
        future = [t - now for t in times if t > now]
        return min([POLL_SECONDS, *future]) if future else POLL_SECONDS


class _Runner:
    """The daemon thread of one root home in this process."""

    def __init__(self, root: Path) -> None:
        self.sender = Sender(root)
        self.wake_event = threading.Event()
        self.last_turn = time.monotonic()
        self.idle = threading.Event()
        self.idle.set()
        context = contextvars.copy_context()  # keeps Hermes's secret scope, if any
        self.thread = threading.Thread(target=context.run, args=(self._loop,),
                                       name="roam-mirror-sender", daemon=True)

    def _loop(self) -> None:
        while not self.sender.stop.is_set():
            self.wake_event.wait(timeout=self._timeout())
            self.wake_event.clear()
            if self.sender.stop.is_set():
                break
            self.idle.clear()
            try:
                self.sender.drain_once()
            except Exception as error:  # the loop must survive anything a pass meets
                log.warning("roam mirror: sender pass failed: %s", _describe(error))
            finally:
                self.idle.set()
        self.sender.close()

    def _timeout(self) -> float:
        try:
            return max(0.05, self.sender.next_wake())
        except Exception as error:  # an unreadable spool state must not stop the loop
            log.warning("roam mirror: cannot tell the next retry time: %s", _describe(error))
            return POLL_SECONDS

    def shutdown(self, grace: float, since_turn: bool = False) -> None:
        """At exit: let a pending or running pass finish for up to `grace` seconds.

        With `since_turn` the grace counts from the last turn this process spooled, so a
        process exits at most `grace` seconds after its turn ended whatever Discord does.
        """
        start = self.last_turn if since_turn else time.monotonic()
        deadline = min(start + grace, time.monotonic() + grace)
        if self.wake_event.is_set():
            time.sleep(0.01)  # let the thread pick the wake up
        while time.monotonic() < deadline and (self.wake_event.is_set()
                                                or not self.idle.is_set()):
            time.sleep(0.02)
        self.sender.stop.set()
        self.wake_event.set()


_runners: dict[Path, _Runner] = {}
_runners_lock = threading.Lock()
_atexit_registered = False


def ensure_started(root: Path) -> None:
    """Start this process's sender thread for `root` (idempotent) and wake it.

    The thread also drains turns spooled by earlier processes (`hermes -z`) and by other
    processes sharing the home; at interpreter exit it may go on until `EXIT_GRACE_SECONDS`
    after the last turn, never longer (a hung Discord does not hold the process).
    """
    global _atexit_registered
    key = Path(root).absolute()
    with _runners_lock:
        runner = _runners.get(key)
        if runner is None or not runner.thread.is_alive():
            runner = _Runner(key)
            _runners[key] = runner
            runner.thread.start()
        if not _atexit_registered:
            atexit.register(_shutdown_all)
            _atexit_registered = True
    runner.last_turn = time.monotonic()
    runner.wake_event.set()


def wake(root: Path) -> None:
    """Ask the running sender of `root` to drain now (no-op when none runs)."""
    runner = _runners.get(Path(root).absolute())
    if runner is not None:
        runner.wake_event.set()


def stop(root: Path, grace: float = 0.0) -> None:
    """Stop the sender thread of `root` (tests, plugin unload)."""
    with _runners_lock:
        runner = _runners.pop(Path(root).absolute(), None)
    if runner is not None:
        runner.shutdown(grace)
        runner.thread.join(timeout=max(grace, 0.1) + 5)


def _shutdown_all() -> None:
    with _runners_lock:
        runners = list(_runners.values())
        _runners.clear()
    for runner in runners:
        started = time.monotonic()
        runner.shutdown(EXIT_GRACE_SECONDS, since_turn=True)
        log.info("roam mirror: sender let go at exit after %.3f s (%.3f s after the turn)",
                 time.monotonic() - started, time.monotonic() - runner.last_turn)


def retry_given_up(root: Path, event_ids: Iterable[str] = (), sink: str = "",
                   timeout: float = 60.0) -> int:
    """Put given-up turns back in line (all, or those in `event_ids`); returns how many.

    Takes the drainer lock, since only its holder writes the sender state.
    """
    wanted = set(event_ids)
    spool = Spool(root)
    deadline = time.monotonic() + timeout
    while True:
        with spool.sender_lock() as acquired:
            if acquired:
                state = spool.read_state()
                count = 0
                for name, record in state.get("sinks", {}).items():
                    if sink and name != sink:
                        continue
                    rejected = record.get("rejected") or {}
                    for event_id in [e for e in rejected if not wanted or e in wanted]:
                        del rejected[event_id]
                        count += 1
                if count:
                    spool.write_state(state)
                return count
        if time.monotonic() >= deadline:
            raise RoamError("another process is sending the mirror's turns; try again later")
        time.sleep(0.2)


def flush(root: Path, timeout: float = 60.0) -> DrainResult:
    """Drain now in the calling thread, waiting up to `timeout` for another drainer."""
    sender = Sender(root)
    deadline = time.monotonic() + timeout
    try:
        while True:
            result = sender.drain_once(force=True)
            if not result.busy or time.monotonic() >= deadline:
                return result
            time.sleep(0.2)
    finally:
        sender.close()
