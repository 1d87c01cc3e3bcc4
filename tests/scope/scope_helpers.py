"""Helpers shared by the scope tests (imported by name: tests/scope is on sys.path)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from roam_core.manager import PluginManager


def write(root: Path, rel: str, data: bytes | str = b"x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def bare_manager() -> PluginManager:
    """A manager that finds no entry points: only core's built-in rules apply."""
    return PluginManager(group="roam.tests.none")


class Home:
    """A Hermes home driven through the real `roam` CLI in a subprocess, on a local store."""

    def __init__(self, root: Path, name: str, store: Path, key: str, extra: str = "") -> None:
        self.root, self.name, self.key = root, name, key
        root.mkdir(parents=True, exist_ok=True)
        write(root, "config.yaml",
              f"# {name}'s config\n{extra}plugins:\n  entries:\n    roam:\n      settings:\n"
              f"        device_name: {name}\n        backend: local\n"
              f"        local_dir: {store}\n")

    def roam(self, *args: str) -> subprocess.CompletedProcess[str]:
        from support.cli import roam_env, run_roam

        return run_roam("--home", str(self.root), *args,
                        env=roam_env(ROAM_ARCHIVE_KEY=self.key))

    def ok(self, *args: str) -> str:
        done = self.roam(*args)
        assert done.returncode == 0, f"roam {' '.join(args)}: {done.stderr}{done.stdout}"
        return done.stdout + done.stderr

    def write(self, rel: str, data: bytes | str) -> Path:
        return write(self.root, rel, data)

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def fleet(tmp: Path, *names: str, extra: str = "") -> list[Home]:
    """Homes sharing one store and key; none initialised yet."""
    import secrets

    store = tmp / "store"
    store.mkdir(exist_ok=True)
    key = secrets.token_hex(32)
    return [Home(tmp / name, name, store, key, extra) for name in names]
