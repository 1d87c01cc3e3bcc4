"""No git child ever sees roam's secrets: the environment is an allowlist, not a copy."""

from __future__ import annotations

import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_backend_git.config import parse_settings
from roam_backend_git.env import child_env, ssh_command
from roam_core.errors import RefConflict
from support.git_remotes import bare_repo

SECRETS = {
    "ROAM_ARCHIVE_KEY": "canary-archive-key-5b1e0c",
    "ROAM_S3_SECRET_ACCESS_KEY": "canary-s3-secret-77ad21",
    "OPENAI_API_KEY": "canary-openai-sk-93f0aa",
    "AWS_SECRET_ACCESS_KEY": "canary-aws-secret-c4d812",
    "GIT_TOKEN": "canary-git-token-1e9b55",   # GIT_* yet a credential: still kept out
}


def _wrapper(directory: Path, log: Path) -> None:
    """A `git` first on PATH that records its environment, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    script = directory / "git"
    script.write_text(f'#!/bin/sh\nenv -0 > "{log}/env.$$"\nexec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def _dump_hook(repo: Path, log: Path) -> None:
    """A pre-receive hook: runs inside the push's receive-pack, a grandchild of roam's git."""
    hook = repo / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nenv -0 > "{log}/hook.$$"\ncat >/dev/null\n')
    hook.chmod(0o755)


def _environments(log: Path, prefix: str) -> list[dict[str, str]]:
    found = []
    for path in sorted(log.glob(f"{prefix}.*")):
        pairs = [item.split("=", 1) for item in path.read_text().split("\0") if "=" in item]
        found.append(dict(pairs))
    return found


def _exercise(backend: GitBackend) -> None:
    backend.create_remote()
    backend.put_new("data/a", b"alpha")
    assert backend.get("data/a", 1, 2) == b"lp"
    version = backend.swap_ref("HEAD", b"gen-1", None)
    assert backend.read_ref("HEAD") == (b"gen-1", version)
    assert backend.exists("data/a") and not backend.exists("data/none")
    assert list(backend.list("data/")) == ["data/a"]
    with pytest.raises(RefConflict):
        backend.swap_ref("HEAD", b"stale", None)
    rows = backend.doctor()
    assert rows[0][1] and rows[1][1], rows


@pytest.mark.parametrize("transport", ["file", "daemon", "http"])
def test_git_children_see_none_of_the_parents_secrets(
        transport: str, make_remote: Callable[[str], str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, open_backend: Callable[..., GitBackend]) -> None:
    log = tmp_path / "envlog"
    bindir = tmp_path / "bin"
    log.mkdir()
    bindir.mkdir()
    _wrapper(bindir, log)
    url = make_remote(transport)
    if transport == "file":
        _dump_hook(Path(url.removeprefix("file://")), log)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    # A git hook that runs roam would leave GIT_DIR behind; it must not steer the mirror.
    elsewhere = bare_repo(tmp_path / "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(elsewhere))
    monkeypatch.setenv("PATH", f"{bindir}:{Path(shutil.which('git') or '').parent}:/usr/bin:/bin")

    _exercise(open_backend(url))

    children = _environments(log, "env")
    assert len(children) >= 15, f"the wrapper saw only {len(children)} git calls"
    if transport == "file":
        hooks = _environments(log, "hook")
        assert hooks, "the pre-receive hook never ran"
        children += hooks
    for env in children:
        leaked = {name for name, value in env.items()
                  if name in SECRETS or any(secret in value for secret in SECRETS.values())}
        assert not leaked, f"a git child saw {sorted(leaked)}"
        assert env.get("GIT_DIR") != str(elsewhere)
    assert not list((elsewhere / "objects").glob("??/*")), "plumbing wrote into $GIT_DIR"
    for env in _environments(log, "env"):
        assert env["GIT_TERMINAL_PROMPT"] == "0"
        assert "BatchMode=yes" in env["GIT_SSH_COMMAND"]
        assert "ConnectTimeout=" in env["GIT_SSH_COMMAND"]
        assert env["GIT_COMMITTER_NAME"] == "roam"


def test_child_env_is_an_allowlist() -> None:
    parent = {"PATH": "/bin", "HOME": "/h", "LC_CTYPE": "C.UTF-8", "SSH_AUTH_SOCK": "/s",
              "https_proxy": "http://proxy:3128", "GIT_TRACE": "1", "GIT_DIR": "/x",
              "GIT_INDEX_FILE": "/i", "GIT_PASSWORD": "p", "GIT_AUTHOR_NAME": "me",
              "HERMES_HOME": "/hh", "SOMETHING_ELSE": "1", "LANGUAGE": "de", **SECRETS}
    env = child_env(parent)
    for name in ("PATH", "HOME", "LC_CTYPE", "SSH_AUTH_SOCK", "https_proxy", "GIT_TRACE"):
        assert env[name] == parent[name]
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_PASSWORD", "HERMES_HOME", "SOMETHING_ELSE",
                 "LANGUAGE", *SECRETS):
        assert name not in env
    assert env["GIT_AUTHOR_NAME"] == "roam" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["LC_ALL"] == "C"


def test_ssh_command_keeps_the_users_choice_and_adds_batch_mode() -> None:
    assert ssh_command({}).startswith("ssh -o BatchMode=yes")
    assert ssh_command({"GIT_SSH_COMMAND": "ssh -i ~/.ssh/k"}).startswith("ssh -i ~/.ssh/k -o")
    assert ssh_command({}, configured="ssh -p 2222").startswith("ssh -p 2222 -o BatchMode")
    assert ssh_command({"GIT_SSH": "/opt/my ssh"}).startswith("'/opt/my ssh' -o")


def test_the_backend_object_holds_no_secret(tmp_path: Path) -> None:
    """Neither the parent's secrets nor a URL's credentials sit in the backend's attributes."""
    url = "https://roam:tok-ghp-canary-6d1f@git.example/me/store.git"
    settings = parse_settings({"git_remote": url}, tmp_path)
    backend = GitBackend(settings, tmp_path / "mirror",
                         parent_env={"PATH": "/bin", "GIT_SSH": "/opt/ssh", **SECRETS})
    shown = " ".join(repr(value) for value in (
        backend, settings, vars(backend), vars(backend.mirror), vars(backend.mirror.git)))
    for secret in (*SECRETS.values(), "tok-ghp-canary-6d1f"):
        assert secret not in shown
    assert "git.example/me/store.git" in repr(settings)
