"""Homes sharing one store on any backend, driven in-process (fast) or as real processes.

The reliability suites (campaign, crash, races, fail-fast) share this. `Runner` keeps one
argparse tree and one plugin manager for a whole test, so a command costs what roam costs,
not what start-up costs; `Home.run` is a real `roam` process for kills and races.
`stores(kind, ...)` yields a fresh store on memory, local, S3 (moto) or git (file://).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roam_core.cli.main import build_parser, run
from roam_core.manager import get_manager, reset_manager
from roam_core.testing import memory_plugin

KINDS = ("memory", "local", "s3", "git")
KEY_ENV = "ROAM_ARCHIVE_KEY"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Store:
    """Where a fleet keeps its store: backend settings, the secrets it needs, the key."""

    kind: str
    settings: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict)
    key: str = ""

    def env(self) -> dict[str, str]:
        return {KEY_ENV: self.key, **self.secrets}


def new_key() -> str:
    import secrets

    return secrets.token_urlsafe(32)


class Runner:
    """Runs `roam` in this process with one parser and one plugin manager."""

    def __init__(self) -> None:
        reset_manager()
        get_manager().register(memory_plugin, name="memory")
        self.parser = build_parser()

    def __call__(self, env: dict[str, str], argv: list[str]) -> Result:
        out, err = io.StringIO(), io.StringIO()
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = run(self.parser.parse_args(argv))
                except SystemExit as exit_:
                    code = int(exit_.code or 0)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        return Result(code, out.getvalue(), err.getvalue())


def settings_yaml(name: str, settings: dict[str, Any]) -> str:
    """The `plugins.entries.roam.settings` block of a config.yaml."""
    lines = ["plugins:", "  entries:", "    roam:", "      settings:",
             f"        device_name: {name}"]
    lines += [f"        {k}: {json.dumps(v)}" for k, v in sorted(settings.items())]
    return "\n".join(lines) + "\n"


class Home:
    """One Hermes home configured for a store."""

    def __init__(self, root: Path, name: str, store: Store, runner: Runner | None = None,
                 **extra: Any) -> None:
        self.root = root
        self.name = name
        self.store = store
        self.runner = runner
        self.settings = {**store.settings, **extra}
        root.mkdir(parents=True, exist_ok=True)
        (root / "config.yaml").write_text(settings_yaml(name, self.settings))

    def copy(self, root: Path) -> Home:
        """A byte copy of this home (state included) at `root`, for a control run."""
        shutil.copytree(self.root, root, symlinks=True)
        twin = object.__new__(Home)
        twin.__dict__.update(self.__dict__, root=root)
        return twin

    def roam(self, *args: str) -> Result:
        """The CLI in this process (needs a `Runner`)."""
        if self.runner is None:
            self.runner = Runner()
        return self.runner(self.store.env(), ["--home", str(self.root), *args])

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """The CLI as a real process (for kills, races and deadlines)."""
        return subprocess.run(self.argv(*args), env=self.env(env), capture_output=True,
                              text=True, timeout=timeout)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "roam_core.cli.main", "--home", str(self.root), *args]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
        base.update(self.store.env())
        base.update(extra or {})
        return base

    def write(self, rel: str, data: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def files(self) -> dict[str, bytes]:
        """Every file of the home outside roam/, for byte-identity checks."""
        found: dict[str, bytes] = {}
        for folder, dirs, names in os.walk(self.root):
            if folder == str(self.root) and "roam" in dirs:
                dirs.remove("roam")  # roam's own state: caches, backups, mirrors
            for name in names:
                path = Path(folder, name)
                if not path.is_symlink():
                    found[path.relative_to(self.root).as_posix()] = path.read_bytes()
        return found


# -- stores ------------------------------------------------------------------------------------


@contextlib.contextmanager
def stores(kind: str, tmp: Path, request: Any = None) -> Iterator[Store]:
    """A fresh, empty store of `kind`; S3 needs the pytest `request` for the moto fixture."""
    key = new_key()
    if kind == "memory":
        yield Store(kind, {"backend": "memory", "memory_store": uuid.uuid4().hex}, key=key)
    elif kind == "local":
        (tmp / "store").mkdir(parents=True, exist_ok=True)
        yield Store(kind, {"backend": "local", "local_dir": str(tmp / "store")}, key=key)
    elif kind == "s3":
        server = request.getfixturevalue("moto_s3")
        bucket = server.fresh_bucket()
        yield Store(kind, server.settings(bucket), server.env(), key=key)
    elif kind == "git":
        from support.git_remotes import bare_repo, file_url

        repo = bare_repo(tmp)
        yield Store(kind, {"backend": "git", "git_remote": file_url(repo)}, key=key)
    else:
        raise ValueError(kind)


@contextlib.contextmanager
def fast_dir(prefix: str) -> Iterator[Path]:
    """A scratch folder on tmpfs when there is one: installs sync the file system often."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
