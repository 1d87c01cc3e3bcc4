"""Fuzzing what Discord answers: statuses, rate-limit headers and bodies the sink must survive.

The Discord sink reads JSON bodies (thread and message ids, `retry_after`, `global`, error
messages) and the `X-RateLimit-*` / `Retry-After` headers of every answer. Whatever comes
back, `deliver` returns a receipt or raises one of the sink errors (all `RoamError`s), and
it writes nothing outside the home.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roam_core.errors import RoamError
from roam_core.mirror.events import TurnEvent
from roam_core.mirror.sink import Receipt
from roam_core.types import PluginContext
from roam_sink_discord.client import DiscordClient
from roam_sink_discord.sink import DiscordSink

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
API = "http://discord.invalid/api/v10"

ascii_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
numbers = st.sampled_from(["inf", "-inf", "nan", "1e999", "-1", "0", "0.25", "3", "abc", "",
                           "9" * 30])
headers = st.dictionaries(
    st.sampled_from(["x-ratelimit-bucket", "x-ratelimit-remaining", "x-ratelimit-reset-after",
                     "retry-after", "x-ratelimit-global", "content-type"]),
    numbers | ascii_text, max_size=4)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
    | st.sampled_from(["123", "not-a-number", "1e999", float("inf")]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["id", "retry_after", "global", "message", "code", "content", "x"]),
        inner, max_size=4), max_leaves=8)
bodies = (values.map(lambda v: json.dumps(v).encode())
          | st.fixed_dictionaries({}, optional={"id": values, "retry_after": values,
                                                "global": values, "message": values,
                                                "code": values}).map(
              lambda v: json.dumps(v).encode())
          | st.binary(max_size=40))
statuses = st.sampled_from([200, 201, 204, 400, 401, 403, 404, 429, 500, 502]) | st.integers(
    100, 599)
answers = st.lists(st.tuples(statuses, headers, bodies), min_size=1, max_size=10)


def _event(reply: str) -> TurnEvent:
    return TurnEvent(event_id="event-1", session_id="session-1", turn_id="turn-1",
                     user_message="hello", reply=reply, time=0.0, title="a session",
                     redacted=True)


def _deliver(script: list[tuple[int, dict[str, str], bytes]], reply: str,
             sandbox: Path) -> Receipt | None:
    home = sandbox / "home"
    home.mkdir()
    queue = list(script)

    def answer(request: httpx.Request) -> httpx.Response:
        status, head, body = queue.pop(0) if queue else (503, {}, b"")
        return httpx.Response(status, headers=head, content=body)

    client = DiscordClient(API, lambda: "token", sleep=lambda _seconds: None, max_wait=5.0)
    client._http = httpx.Client(transport=httpx.MockTransport(answer))
    context = PluginContext(home=home, state_dir=home / "roam", secret=lambda _name: "token")
    sink = DiscordSink({"discord_channel_id": "42", "discord_api_base": API}, context,
                       client=client)
    try:
        return sink.deliver(_event(reply))
    except RoamError:
        return None
    finally:
        sink.close()
        outside = sorted(p.name for p in sandbox.iterdir())
        assert outside == ["home"], f"written outside the home: {outside}"


@FUZZ
@given(answers, st.sampled_from(["short reply", "x" * 4500]))
@example([(200, {"x-ratelimit-remaining": "inf", "x-ratelimit-reset-after": "1"}, b"{}")], "r")
@example([(200, {}, b"[1]")], "r")
@example([(429, {"retry-after": "soon"}, b"{}")], "r")
@example([(429, {}, b'{"retry_after": [1]}')], "r")
def test_any_answer_is_a_receipt_or_a_sink_error(script: list[Any], reply: str) -> None:
    with tempfile.TemporaryDirectory(prefix="roam-fuzz-discord-") as sandbox:
        receipt = _deliver(script, reply, Path(sandbox))
    if receipt is not None:
        assert receipt.event_id == "event-1" and receipt.parts >= 1
