from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.mirror import config as mirror_config
from roam_core.mirror import redact

from .fake_hermes import write_fake_agent

FAKE_HERMES_MARK = "HERMES-ONLY-SECRET"


def fake_hermes_redactor(text: str) -> str:
    """Stands in for agent.redact: masks one marker roam's own patterns do not know."""
    return text.replace(FAKE_HERMES_MARK, "[hermes-redacted]")


@pytest.fixture(autouse=True)
def _fake_redactor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("ROAM_ARCHIVE_KEY", "ROAM_DISCORD_BOT_TOKEN", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    redact.set_hermes_redactor(fake_hermes_redactor)
    mirror_config._cache.clear()
    yield
    redact.set_hermes_redactor(None, explicit=False)
    mirror_config._cache.clear()


def write_settings(root: Path, **settings: object) -> None:
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    data = {"plugins": {"entries": {"roam": {"settings": settings}}}}
    (root / "config.yaml").write_text(yaml.safe_dump(data))
    mirror_config._cache.clear()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    return home


@pytest.fixture
def memory_sink(root: Path):
    """A memory sink registered with the plugin manager and enabled in `root`'s settings."""
    from roam_core.manager import get_manager
    from roam_core.mirror.memory import MemorySinkPlugin

    plugin = MemorySinkPlugin()
    get_manager().register(plugin, name="memory-sink-test")
    write_settings(root, mirror_sinks=["memory"])
    return plugin.destination


@pytest.fixture
def fake_agent_path(tmp_path: Path) -> Path:
    """A folder holding a fake `agent.redact` (Hermes 0.19 API) to put on PYTHONPATH."""
    return write_fake_agent(tmp_path / "fake-agent")
