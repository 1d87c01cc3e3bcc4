"""The Hermes test harness itself: cache key, clean environment, the stub model."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from support import hermes_env
from support.stub_model import StubModel


def test_env_key_tracks_the_hermes_version() -> None:
    key = hermes_env.env_key()
    assert key == hermes_env.env_key() and key.startswith("hermes-0.19.0-")
    assert hermes_env.env_key("0.20.0") != key


def test_env_key_is_per_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another checkout (a worktree, CI's clone) never runs in this checkout's environment."""
    key = hermes_env.env_key()
    other = tmp_path / "other-checkout"
    for name in ("", *hermes_env.PACKAGES):
        (other / name).mkdir(parents=True, exist_ok=True)
        (other / name / "pyproject.toml").write_bytes(
            (hermes_env.REPO / name / "pyproject.toml").read_bytes())
    monkeypatch.setattr(hermes_env, "REPO", other)
    assert hermes_env.env_key() != key


def test_cache_root_is_overridable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROAM_TEST_CACHE", str(tmp_path))
    assert hermes_env.cache_root() == tmp_path


def test_clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("ROAM_ARCHIVE_KEY", "should-not-leak")
    home = hermes_env.HermesHome(hermes_env.HermesVenv(tmp_path / "venv"), tmp_path / "h",
                                 tmp_path / "cwd", tmp_path / "user")
    env = home.env()
    assert set(env) == {"PATH", "HOME", "HERMES_HOME", "LANG", "LC_ALL", "TERM", "NO_COLOR"}
    assert env["HERMES_HOME"] == str(tmp_path / "h") and env["HOME"] == str(tmp_path / "user")
    assert env["PATH"].startswith(str(tmp_path / "venv" / "bin"))


def _post(url: str, body: dict) -> str:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def test_stub_streams_records_and_scripts_tool_calls() -> None:
    with StubModel() as stub:
        assert stub.base_url.startswith("http://127.0.0.1:")
        mark = stub.mark()
        stub.queue_tool_call("roam_status", {"x": 1})
        url = f"{stub.base_url}/chat/completions"
        first = _post(url, {"stream": True, "messages": [{"role": "user", "content": "hi"}]})
        chunks = [json.loads(line[6:]) for line in first.splitlines()
                  if line.startswith("data: {")]
        call = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
        assert call["function"]["name"] == "roam_status"
        assert json.loads(call["function"]["arguments"]) == {"x": 1}
        assert first.rstrip().endswith("data: [DONE]")
        second = json.loads(_post(url, {"messages": [
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
            {"role": "tool", "tool_call_id": "c", "content": "{\"ok\": true}"}]}))
        assert second["choices"][0]["message"]["content"] == stub.reply
        assert stub.user_messages(since=mark) == ["hi", "again"]
        assert stub.tool_results(since=mark)[0]["content"] == "{\"ok\": true}"
        with urllib.request.urlopen(f"{stub.base_url}/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "stub-model"
