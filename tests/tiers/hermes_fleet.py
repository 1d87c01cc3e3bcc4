"""Hermes homes for the tier tests: a desk with real sessions and cron jobs, copied per test.

Making the desk costs real agent turns (2–5 s each), so it is made once per module and each
test works on its own copy, with its own store.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

from support.hermes_env import HermesHome, HomeFactory


def ok(result: Any) -> Any:
    assert result.returncode == 0, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def make_desk(factory: HomeFactory) -> HermesHome:
    """A home with one ended session at the root, one in profile `work`, and one cron job."""
    desk = factory.new("desk-template")
    ok(desk.oneshot("remember the desk"))
    ok(desk.hermes("profile", "create", "work", "--clone", "--no-alias"))
    ok(desk.hermes("-p", "work", "-z", "a question at work"))
    ok(desk.hermes("cron", "create", "every 2h", "say hello", "--name", "hello-job"))
    return desk


def clone(template: HermesHome, where: Path) -> HermesHome:
    """A copy of `template` at `where/.hermes` (the same Hermes environment)."""
    path = where / ".hermes"
    shutil.copytree(template.path, path, symlinks=True)
    home = HermesHome(template.venv, path, where / "cwd", where / "user")
    home.workdir.mkdir(parents=True, exist_ok=True)
    home.user_home.mkdir(parents=True, exist_ok=True)
    return home


def join(home: HermesHome, name: str, store: Path, key: str, **settings: Any) -> HermesHome:
    """Point `home` at the shared local store as device `name`."""
    home.write_dotenv(ROAM_ARCHIVE_KEY=key)
    home.set_roam_settings(device_name=name, backend="local", local_dir=str(store), **settings)
    return home


def new_key() -> str:
    return os.urandom(32).hex()


def jobs(home: HermesHome, rel: str = "cron/jobs.json") -> dict[str, dict[str, Any]]:
    data = json.loads((home.path / rel).read_text())
    return {job["id"]: job for job in data["jobs"]}


def roam_inprocess(home: HermesHome | Path, *args: str) -> tuple[int, str, str]:
    """The roam CLI in this test process (to tune module constants such as lock waits)."""
    from roam_core.cli.main import main
    from roam_core.manager import reset_manager

    root = home if isinstance(home, Path) else home.path
    out, err = io.StringIO(), io.StringIO()
    reset_manager()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--home", str(root), *args])
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every regular file below `root` with its bytes (for "nothing was written").

    roam's download caches (`roam/cache/`) are left out: verifying the remote fills them.
    """
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and not rel.startswith("roam/cache/"):
            found[rel] = path.read_bytes()
    return found


def plain_home(root: Path, name: str, store: Path, key: str, **settings: Any) -> Path:
    """A root home without Hermes: roam's settings in config.yaml, the key in .env."""
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    block = {"device_name": name, "backend": "local", "local_dir": str(store), **settings}
    (root / "config.yaml").write_text(yaml.safe_dump(
        {"plugins": {"entries": {"roam": {"settings": block}}}}, sort_keys=False))
    (root / ".env").write_text(f"ROAM_ARCHIVE_KEY={key}\n")
    return root
