"""The Discord-shaped server itself enforces the limits the proofs rely on."""

from __future__ import annotations

import httpx
import pytest

from support.discord_server import DiscordServer

from .conftest import CHANNEL, TOKEN


@pytest.fixture
def client(server: DiscordServer):
    with httpx.Client(base_url=server.api_base,
                      headers={"Authorization": f"Bot {TOKEN}"}) as http:
        yield http


def _thread(client: httpx.Client) -> str:
    made = client.post(f"/channels/{CHANNEL}/threads", json={"name": "t", "type": 11})
    assert made.status_code == 201
    return made.json()["id"]


def _message(content: str, **extra: object) -> dict[str, object]:
    return {"content": content, "allowed_mentions": {"parse": []}, **extra}


def test_auth_and_permissions(server: DiscordServer, client: httpx.Client) -> None:
    assert httpx.post(f"{server.api_base}/channels/{CHANNEL}/threads",
                      json={"name": "t", "type": 11}).status_code == 401
    server.forbidden.add(CHANNEL)
    assert client.post(f"/channels/{CHANNEL}/threads",
                       json={"name": "t", "type": 11}).status_code == 403


def test_thread_rules(client: httpx.Client) -> None:
    path = f"/channels/{CHANNEL}/threads"
    assert client.post(path, json={"name": "x" * 101, "type": 11}).status_code == 400
    assert client.post(path, json={"name": "", "type": 11}).status_code == 400
    assert client.post(path, json={"name": "t"}).status_code == 400  # would be private
    assert client.post(path, json={"name": "t", "type": 11,
                                   "auto_archive_duration": 5}).status_code == 400
    assert client.post("/channels/999/threads",
                       json={"name": "t", "type": 11}).json()["code"] == 10003


def test_message_rules(client: httpx.Client) -> None:
    thread = _thread(client)
    path = f"/channels/{thread}/messages"
    assert client.post(path, json=_message("x" * 2000)).status_code == 200
    assert client.post(path, json=_message("x" * 2001)).status_code == 400
    assert client.post(path, json=_message("  ")).status_code == 400
    assert client.post(path, json={"content": "@everyone"}).status_code == 400
    assert client.post(path, json=_message("n", nonce="x" * 26)).status_code == 400
    assert client.post("/channels/42/messages", json=_message("x")).status_code == 404


def test_nonce_dedup_only_when_enforced(server: DiscordServer, client: httpx.Client) -> None:
    thread = _thread(client)
    path = f"/channels/{thread}/messages"
    first = client.post(path, json=_message("a", nonce="n1", enforce_nonce=True)).json()
    again = client.post(path, json=_message("a", nonce="n1", enforce_nonce=True)).json()
    assert first["id"] == again["id"]
    client.post(path, json=_message("a", nonce="n1"))
    assert len(server.messages_in(thread)) == 2


def test_bucket_limit_answers_429_with_headers(client: httpx.Client) -> None:
    thread = _thread(client)
    path = f"/channels/{thread}/messages"
    answers = [client.post(path, json=_message(str(n))) for n in range(6)]
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    assert answers[4].headers["X-RateLimit-Remaining"] == "0"
    assert float(answers[4].headers["X-RateLimit-Reset-After"]) > 0
    assert answers[-1].json()["global"] is False and answers[-1].json()["retry_after"] > 0
    assert answers[-1].headers["X-RateLimit-Scope"] == "user"


def test_injected_global_429(server: DiscordServer, client: httpx.Client) -> None:
    server.inject(429, retry_after=0.5, global_=True)
    answer = client.post(f"/channels/{CHANNEL}/threads", json={"name": "t", "type": 11})
    assert answer.status_code == 429 and answer.json()["global"] is True
    assert answer.headers["X-RateLimit-Global"] == "true"


def test_thread_listings_and_their_404s(server: DiscordServer, client: httpx.Client) -> None:
    thread = _thread(client)
    channel = client.get(f"/channels/{CHANNEL}").json()
    assert channel["guild_id"] == server.guild
    assert client.get(f"/channels/{thread}").json()["parent_id"] == CHANNEL
    active = client.get(f"/guilds/{server.guild}/threads/active").json()["threads"]
    assert [(t["id"], t["parent_id"], t["name"]) for t in active] == [(thread, CHANNEL, "t")]
    assert client.get(f"/channels/{CHANNEL}/threads/archived/public").json()["threads"] == []
    server.threads[thread].archived = True
    assert client.get(f"/guilds/{server.guild}/threads/active").json()["threads"] == []
    [archived] = client.get(f"/channels/{CHANNEL}/threads/archived/public").json()["threads"]
    assert archived["id"] == thread and archived["thread_metadata"]["archived"]
    unknown_guild = client.get("/guilds/999/threads/active")
    assert unknown_guild.status_code == 404 and unknown_guild.json()["code"] == 10004
    for path in ("/channels/999", "/channels/999/threads/archived/public"):
        missing = client.get(path)
        assert missing.status_code == 404 and missing.json()["code"] == 10003
