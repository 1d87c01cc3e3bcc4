"""A small fleet of homes sharing one store, driven through the real CLI entry point."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from campaign.harness import Result, Runner, new_key, settings_yaml

__all__ = ["Device", "Result", "new_key", "settings_for"]


class Device:
    """One Hermes home configured for a store."""

    def __init__(self, root: Path, name: str, settings: dict[str, Any], key: str) -> None:
        self.root = root
        self.name = name
        self.key = key
        root.mkdir(parents=True, exist_ok=True)
        (root / "config.yaml").write_text(settings_yaml(name, settings))

    def roam(self, *args: str, key: str | None = None) -> Result:
        """Run the CLI in-process (fast); the archive key comes from the environment."""
        env = {"ROAM_ARCHIVE_KEY": key if key is not None else self.key}
        return Runner()(env, ["--home", str(self.root), *args])

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the CLI in a subprocess (for crash tests and real process boundaries)."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
        base["ROAM_ARCHIVE_KEY"] = self.key
        base.update(env or {})
        return subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home",
                               str(self.root), *args], env=base, capture_output=True,
                              text=True, timeout=timeout)

    def write(self, rel: str, data: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def snapshot_bytes(self) -> dict[str, bytes]:
        """Every file of the home outside roam/, for byte-identity checks."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if rel == "roam" or rel.startswith("roam/") or not path.is_file():
                continue
            found[rel] = path.read_bytes()
        return found


def settings_for(kind: str, tmp: Path) -> dict[str, Any]:
    if kind == "memory":
        return {"backend": "memory", "memory_store": uuid.uuid4().hex}
    (tmp / "store").mkdir(exist_ok=True)
    return {"backend": "local", "local_dir": str(tmp / "store")}
