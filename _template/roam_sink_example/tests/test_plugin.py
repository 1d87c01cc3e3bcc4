"""roam finds the installed sink through its entry point; settings and secrets are checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from roam_core.plugin import (
    ConfigError,
    PluginContext,
    PluginManager,
    SinkTerminal,
    make_live_event,
)

from webhook_server import WebhookServer


def _context(tmp_path: Path, token: str | None) -> PluginContext:
    return PluginContext(home=tmp_path, state_dir=tmp_path / "roam",
                         secret=lambda name: token if name == "ROAM_EXAMPLE_WEBHOOK_TOKEN"
                         else None)


def test_the_entry_point_registers_the_sink() -> None:
    sinks = PluginManager().session_sinks()
    assert "example" in sinks
    assert {s.name for s in sinks["example"].settings if s.secret} == {
        "ROAM_EXAMPLE_WEBHOOK_TOKEN"}


def test_a_bad_url_is_a_one_line_config_error(tmp_path: Path) -> None:
    plugin = PluginManager().sink("example")
    with pytest.raises(ConfigError, match="example_webhook_url"):
        plugin.factory({"example_webhook_url": "ftp://nowhere"}, _context(tmp_path, None))


def test_a_refused_token_is_terminal_and_never_shown(tmp_path: Path) -> None:
    plugin = PluginManager().sink("example")
    with WebhookServer("the-right-token") as server:
        sink = plugin.factory({"example_webhook_url": server.url},
                              _context(tmp_path, "a-wrong-token"))
        event = make_live_event(session_id="s", turn_id="1", user_message="hi", reply="hello")
        with pytest.raises(SinkTerminal) as failure:
            sink.deliver(event.with_text(redacted=True))
    assert "a-wrong-token" not in str(failure.value) + sink.fingerprint()


def test_roam_lists_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    result = subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home",
                             str(tmp_path), "sinks", "list"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and "example" in result.stdout, result.stderr
