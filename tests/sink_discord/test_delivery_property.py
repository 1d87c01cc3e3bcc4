"""Property: any interleaving of sessions' turns, drains and per-thread failures delivers
every turn exactly once, in order per session, and one session's trouble never holds the
others (the sender and the Discord sink against the Discord-shaped server)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roam_core.mirror.events import make_live_event
from roam_core.mirror.sender import Sender
from roam_core.mirror.spool import Spool
from roam_core.secrets import reader
from roam_core.types import PluginContext
from roam_sink_discord.client import DiscordClient
from roam_sink_discord.sink import DiscordSink
from roam_sink_discord.threads import ThreadMap
from support.discord_server import DiscordServer

from .conftest import CHANNEL, TOKEN, write_config

SESSIONS = ("a", "b")
REFUSALS = ("lock", "delete", "archive_locked", "hiccup")

_turn = st.tuples(st.just("turn"), st.sampled_from(SESSIONS))
step = st.one_of(  # turns weigh most: a refusal matters when turns follow it
    _turn, _turn, _turn,
    st.tuples(st.just("drain"), st.just("")),
    st.tuples(st.sampled_from(REFUSALS), st.sampled_from(SESSIONS)),
)


#: Examples share one HTTP connection pool (building one takes about a second here).
_HTTP: list[Any] = []
#: Spool and map files on tmpfs when there is one: fsync is not what is tested here.
_FAST_DIR = "/dev/shm" if Path("/dev/shm").is_dir() else None


def _loader(name: str, values: Mapping[str, Any], root: Path) -> DiscordSink:
    import httpx

    context = PluginContext(home=root, state_dir=root / "roam", secret=reader(root))
    sink = DiscordSink(values, context)
    # No real sleeping between retries: the property is about order, not about waiting.
    sink.client = DiscordClient(sink.api_base, sink._token, sleep=lambda _s: None)
    if not _HTTP:
        _HTTP.append(httpx.Client(timeout=10.0))
    sink.client._http = _HTTP[0]
    sink.client.close = lambda: None  # type: ignore[method-assign]
    return sink


def _refuse(server: DiscordServer, root: Path, how: str, session: str,
            deleted: list[dict[str, Any]]) -> None:
    entry = ThreadMap(root).get(CHANNEL, f"default/{session}") or {}
    thread = str(entry.get("thread_id") or "")
    if how == "hiccup":  # a transient failure of the next post anywhere
        server.inject(503, count=1, path_contains="/messages")
    elif thread in server.threads:
        if how == "delete":  # what was posted before still counts as delivered
            deleted.extend(server.messages_in(thread))
        {"lock": server.lock_thread, "delete": server.delete_thread,
         "archive_locked": lambda t: server.archive_thread(t, locked=True)}[how](thread)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=18))
@example(steps=[("turn", "a"), ("turn", "b"), ("lock", "a"), ("turn", "a"), ("turn", "b"),
                ("archive_locked", "a"), ("turn", "a"), ("delete", "b"), ("turn", "b")])
def test_every_turn_once_and_in_order_per_session(steps: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory(dir=_FAST_DIR) as folder, \
            DiscordServer(token=TOKEN, channels={CHANNEL}, bucket_limit=10_000) as server:
        root = Path(folder)
        (root / ".env").write_text(f"ROAM_DISCORD_BOT_TOKEN={TOKEN}\n")
        write_config(root, server)
        sender = Sender(root, loader=_loader)
        spool = Spool(root)
        sent: dict[str, list[str]] = {session: [] for session in SESSIONS}
        deleted: list[dict[str, Any]] = []
        try:
            for kind, session in steps:
                if kind == "turn":
                    number = len(sent[session]) + 1
                    text = f"{session}-turn-{number}"
                    spool.append(make_live_event(
                        session_id=session, turn_id=str(number), user_message=text,
                        reply="ok", title=f"Session {session}").with_text(redacted=True))
                    sent[session].append(text)
                elif kind == "drain":
                    sender.drain_once(force=True)
                else:  # delivered what is pending first, so there is a thread to refuse
                    sender.drain_once(force=True)
                    _refuse(server, root, kind, session, deleted)
            server.faults.clear()
            for _ in range(4):
                sender.drain_once(force=True)
        finally:
            sender.close()
        arrived: dict[str, list[str]] = {session: [] for session in SESSIONS}
        with server.lock:
            messages = sorted([*deleted, *(m for t in server.threads.values()
                                           for m in t.messages)], key=lambda m: int(m["id"]))
        for message in messages:
            if message["content"].startswith("**You**"):
                text = message["content"].split("\n")[1]
                arrived[text.split("-")[0]].append(text)
        assert arrived == sent
