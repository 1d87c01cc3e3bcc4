"""The real Hermes Agent for tests: a cached virtual environment and offline-ready homes.

What this gives a test (import the fixtures into your `conftest.py`)::

    from support.hermes_env import hermes_venv, stub_model, hermes_homes  # noqa: F401

    @pytest.mark.hermes
    def test_turn(hermes_homes, stub_model):
        home = hermes_homes.new("a")              # offline-ready copy, roam enabled
        mark = stub_model.mark()
        result = home.oneshot("hi")               # `hermes -z "hi"`
        assert result.returncode == 0
        assert "STUB-REPLY" in result.stdout
        assert stub_model.user_messages(since=mark)[-1].startswith("hi")

The pieces:

* `hermes_venv` (session fixture) / `ensure_hermes_venv()`: a virtual environment with
  `hermes-agent==HERMES_VERSION` plus this repository's five packages installed editable
  (`uv venv` + `uv pip install hermes-agent==… -e ./roam_core -e ./roam_backend_local …`;
  uv takes the workspace siblings from the workspace). It is cached under
  `$ROAM_TEST_CACHE` (default `~/.cache/roam-tests/`), keyed by the Hermes version and a
  hash of the repository's `pyproject.toml` files, built once under a file lock so parallel
  test processes (xdist workers, two checkouts) wait for one build, and marked complete
  only after it succeeded (a half-built one is rebuilt). Editable installs mean source
  edits need no rebuild; a changed dependency or entry point changes the key.
  Measured here (2 cores): a build takes 9 s with a warm uv cache (17 s half-warm; a cold
  cache downloads about 100 wheels), a reuse under 1 ms.
* `stub_model` (session fixture): a `support.stub_model.StubModel` on 127.0.0.1, free port,
  recording every request; see that module for scripting replies and tool calls.
* `hermes_homes` (session fixture): a `HomeFactory`. `new(name)` returns a `HermesHome`
  copied from a template that was made offline-ready once per session with the real CLI
  (`hermes config set` for model.provider custom, base_url = the
  stub, default stub-model, context_length, security.tirith_enabled false,
  security.allow_lazy_installs false, then `hermes plugins enable roam
  --no-allow-tool-override`). `new(name, enable_roam=False)` leaves roam disabled.
* `HermesHome`: `hermes(*args)` runs the real `hermes` binary with a clean environment
  (PATH, HOME = a private folder, HERMES_HOME, LANG; nothing inherited: no ROAM_*,
  HERMES_*, proxies or keys) in a private working directory; `oneshot(prompt)` is
  `hermes -z`, `chat(prompt)` is `hermes chat -q … -Q` (fires on_session_finalize),
  `roam(*args)` is `hermes roam …`, `config_set(key, value)` is `hermes config set`,
  `set_roam_settings(**values)` edits `plugins.entries.roam.settings` directly (fast),
  `write_dotenv(NAME=value)` writes the home's `.env` (how a user gives Hermes secrets),
  `hermes_python(...)` runs the environment's Python in the home (to drive Hermes
  in-process, e.g. `discover_plugins()` and a plugin's registered handlers), `log_text()`
  returns `logs/agent.log` + `errors.log` (hook failures are logged there by `chat -q`).
  Pass `env=home.env(PYTHONPATH=…)` to add to the clean environment. Every run is timed:
  `home.timings` holds `(argv, seconds)`.

Measured on this machine, idle: a `hermes -z` turn 2.3–2.8 s, `hermes chat -q` 2.9 s,
`hermes roam …` / `plugins list` / `config set` 0.6–1 s each, the template home 6 s. Under
a parallel test load on 2 cores expect two to three times that.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.stub_model import StubModel

HERMES_VERSION = "0.19.0"
REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("roam_core", "roam_backend_local", "roam_backend_s3", "roam_backend_git",
            "roam_sink_discord")
#: Building the venv downloads hermes-agent and its dependencies on a cold cache.
BUILD_TIMEOUT = 900
#: Keyed venvs older than this (unused) are removed when a new one is built.
STALE_SECONDS = 24 * 3600


def cache_root() -> Path:
    """Where built environments live: `$ROAM_TEST_CACHE`, else `~/.cache/roam-tests`."""
    explicit = os.environ.get("ROAM_TEST_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "roam-tests"


def env_key(hermes_version: str = HERMES_VERSION) -> str:
    """The cache key: the Hermes version, this checkout's path and every pyproject.toml.

    The environment installs this checkout's packages editable, so another checkout of the
    repository (a worktree, CI's fresh clone) must never reuse it: it would run that
    checkout's code inside Hermes.
    """
    digest = hashlib.sha256(hermes_version.encode())
    digest.update(str(REPO.resolve()).encode() + b"\0")
    for name in ("", *PACKAGES):
        path = REPO / name / "pyproject.toml"
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"hermes-{hermes_version}-{digest.hexdigest()[:12]}"


def _uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    for python in (sys.executable, shutil.which("python3") or "python3"):
        probe = subprocess.run([python, "-m", "uv", "--version"], capture_output=True)
        if probe.returncode == 0:
            return [python, "-m", "uv"]
    raise RuntimeError("uv is needed to build the Hermes test environment (pip install uv)")


@dataclass(frozen=True)
class HermesVenv:
    """A built environment: `hermes` and `python` inside it."""

    path: Path
    build_seconds: float | None = None

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def hermes(self) -> Path:
        return self.bin / "hermes"

    @property
    def python(self) -> Path:
        return self.bin / "python"


def _build(target: Path, hermes_version: str) -> float:
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    uv = _uv()
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([*uv, "venv", "-q", "--python", base_python, str(target)], env=env,
                   check=True, capture_output=True, timeout=BUILD_TIMEOUT, cwd=REPO)
    editable = [arg for name in PACKAGES for arg in ("-e", f"./{name}")]
    result = subprocess.run(
        [*uv, "pip", "install", "-q", "--python", str(target / "bin" / "python"),
         f"hermes-agent=={hermes_version}", *editable],
        env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, cwd=REPO)
    if result.returncode != 0:
        raise RuntimeError(f"building the Hermes test environment failed:\n{result.stderr}")
    return time.monotonic() - started


def _prune(root: Path, keep: Path) -> None:
    now = time.time()
    for other in root.glob("hermes-*"):
        marker = other / ".roam-ready"
        if other == keep or not other.is_dir():
            continue
        try:
            age = now - marker.stat().st_mtime
        except OSError:
            continue
        if age > STALE_SECONDS:
            shutil.rmtree(other, ignore_errors=True)
            (root / f"{other.name}.lock").unlink(missing_ok=True)


def ensure_hermes_venv(hermes_version: str = HERMES_VERSION) -> HermesVenv:
    """The cached environment, built first if needed (once, under a lock)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / env_key(hermes_version)
    marker = target / ".roam-ready"
    with open(root / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            info = json.loads(marker.read_text())
            marker.touch()
            return HermesVenv(target, info.get("build_seconds"))
        if target.exists():
            shutil.rmtree(target)
        try:
            seconds = _build(target, hermes_version)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        marker.write_text(json.dumps({"hermes_version": hermes_version,
                                      "build_seconds": round(seconds, 1),
                                      "built_at": time.time()}))
        _prune(root, target)
        return HermesVenv(target, seconds)


@dataclass
class HermesHome:
    """One Hermes home driven through the real `hermes` binary of `venv`."""

    venv: HermesVenv
    path: Path
    workdir: Path
    user_home: Path
    timings: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """A clean environment: nothing inherited but what Hermes needs to run."""
        env = {
            "PATH": f"{self.venv.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.user_home),
            "HERMES_HOME": str(self.path),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
        }
        env.update(extra)
        return env

    def hermes(self, *args: str, input: str = "", timeout: float = 180,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run `hermes ARGS…` in this home; never raises on a non-zero exit."""
        started = time.monotonic()
        result = subprocess.run([str(self.venv.hermes), *args], input=input,
                                capture_output=True, text=True, timeout=timeout,
                                cwd=self.workdir, env=env or self.env())
        self.timings.append((tuple(args), time.monotonic() - started))
        return result

    def oneshot(self, prompt: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """One agent turn with `hermes -z` (no on_session_finalize; os._exit afterwards)."""
        return self.hermes("-z", prompt, **kw)

    def chat(self, prompt: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """One agent turn with `hermes chat -q … -Q` (fires on_session_finalize at exit)."""
        return self.hermes("chat", "-q", prompt, "-Q", **kw)

    def hermes_python(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """The Hermes environment's Python, in this home (to drive Hermes in-process)."""
        started = time.monotonic()
        result = subprocess.run([str(self.venv.python), *args], capture_output=True, text=True,
                                timeout=kw.get("timeout", 180), cwd=self.workdir,
                                env=kw.get("env") or self.env())
        self.timings.append((("python", *args[:1]), time.monotonic() - started))
        return result

    def roam(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """`hermes roam ARGS…`: the roam CLI mounted inside Hermes."""
        return self.hermes("roam", *args, **kw)

    def config_set(self, key: str, value: str) -> None:
        result = self.hermes("config", "set", key, value, "--force")
        if result.returncode != 0:
            raise RuntimeError(f"hermes config set {key} failed: {result.stderr}")

    def config(self) -> dict[str, Any]:
        import yaml

        text = (self.path / "config.yaml").read_text() if (self.path / "config.yaml").exists() \
            else ""
        return yaml.safe_load(text) or {}

    def set_roam_settings(self, **values: Any) -> None:
        """Write `plugins.entries.roam.settings` keys straight into config.yaml."""
        import yaml

        data = self.config()
        entry = data.setdefault("plugins", {}).setdefault("entries", {}).setdefault("roam", {})
        entry.setdefault("settings", {}).update(values)
        (self.path / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

    def write_dotenv(self, **values: str) -> None:
        lines = [f"{name}={value}" for name, value in values.items()]
        path = self.path / ".env"
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o600)

    def log_text(self) -> str:
        """agent.log and errors.log, for asserting on what Hermes logged."""
        parts = []
        for name in ("agent.log", "errors.log"):
            path = self.path / "logs" / name
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)


def make_offline(home: HermesHome, base_url: str, enable_roam: bool = True) -> None:
    """Configure `home` so a real turn runs against the stub with no network (§F)."""
    for key, value in (("model.provider", "custom"), ("model.base_url", base_url),
                       ("model.default", "stub-model"), ("model.context_length", "128000"),
                       ("security.tirith_enabled", "false"),
                       ("security.allow_lazy_installs", "false")):
        home.config_set(key, value)
    if enable_roam:
        result = home.hermes("plugins", "enable", "roam", "--no-allow-tool-override")
        if result.returncode != 0:
            raise RuntimeError(f"hermes plugins enable roam failed: {result.stderr}")


class HomeFactory:
    """Makes offline-ready homes fast: one template per session, copied per test."""

    def __init__(self, venv: HermesVenv, stub: StubModel, base: Path) -> None:
        self.venv = venv
        self.stub = stub
        self.base = base
        self._templates: dict[bool, Path] = {}
        self._count = 0

    def _home(self, path: Path) -> HermesHome:
        workdir = path.parent / f"{path.name}-cwd"
        user_home = path.parent / f"{path.name}-user"
        for folder in (path, workdir, user_home):
            folder.mkdir(parents=True, exist_ok=True)
        return HermesHome(self.venv, path, workdir, user_home)

    def _template(self, enable_roam: bool) -> Path:
        if enable_roam not in self._templates:
            home = self._home(self.base / f"template-{'roam' if enable_roam else 'plain'}")
            make_offline(home, self.stub.base_url, enable_roam=enable_roam)
            self._templates[enable_roam] = home.path
        return self._templates[enable_roam]

    def new(self, name: str = "home", enable_roam: bool = True) -> HermesHome:
        """A fresh offline-ready home (roam enabled unless told otherwise)."""
        template = self._template(enable_roam)
        self._count += 1
        path = self.base / f"{self._count:03d}-{name}" / ".hermes"
        path.parent.mkdir(parents=True)
        shutil.copytree(template, path, symlinks=True)
        home = self._home(path)
        return home


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def hermes_venv() -> HermesVenv:
    """The cached hermes-agent environment with this repo's packages (built if needed)."""
    return ensure_hermes_venv()


@pytest.fixture(scope="session")
def stub_model() -> Iterator[StubModel]:
    """A recording OpenAI-compatible stub on 127.0.0.1, shared by the session."""
    with StubModel() as stub:
        yield stub


@pytest.fixture(scope="session")
def hermes_homes(hermes_venv: HermesVenv, stub_model: StubModel,
                 tmp_path_factory: pytest.TempPathFactory) -> HomeFactory:
    """Offline-ready Hermes homes pointed at `stub_model`."""
    return HomeFactory(hermes_venv, stub_model, tmp_path_factory.mktemp("hermes-homes"))


@pytest.fixture(autouse=True)
def clean_roam_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No inherited ROAM_/HERMES_ variables and no installed secret provider, before and after.

    Autouse wherever a conftest imports it: the plugin code under test installs Hermes's
    secret scope as roam's provider, which must not leak from one test into the next.
    """
    from roam_core import secrets

    for name in list(os.environ):
        if name.startswith(("ROAM_", "HERMES_")):
            monkeypatch.delenv(name)
    secrets.use_provider(None)
    yield
    secrets.use_provider(None)
