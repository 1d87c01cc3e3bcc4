"""Failures come back as one clear line in roam's error tree, quickly, with no credentials."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_core import deadline
from roam_core.errors import BackendError, DeadlineExceeded, RefConflict, TransientBackendError
from support.git_remotes import bare_repo, blackhole, file_url, free_port, smart_http

Opener = Callable[..., GitBackend]


def _assert_one_line(error: BaseException, *forbidden: str) -> str:
    text = str(error)
    assert text and "\n" not in text, repr(text)
    assert "Traceback" not in text
    for secret in forbidden:
        assert secret not in text, text
    return text


@pytest.mark.slow
def test_blackholed_remotes_fail_within_20_seconds(open_backend: Opener) -> None:
    """http that accepts and never answers, http and git:// whose connect hangs (in parallel)."""
    cases = [("silent", "http"), ("syndrop", "http"), ("syndrop", "git")]
    outcomes: dict[tuple[str, str], tuple[float, BaseException | None]] = {}
    with contextlib.ExitStack() as stack:
        urls = {case: stack.enter_context(blackhole(case[0])) for case in cases}
        backends = {case: open_backend(url.replace("http://", f"{case[1]}://"))
                    for case, url in urls.items()}

        def attempt(case: tuple[str, str]) -> None:
            started = time.monotonic()
            try:
                backends[case].read_ref("HEAD")
                outcomes[case] = (time.monotonic() - started, None)
            except BaseException as error:
                outcomes[case] = (time.monotonic() - started, error)

        threads = [threading.Thread(target=attempt, args=(case,)) for case in cases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    for case in cases:
        elapsed, error = outcomes[case]
        assert isinstance(error, TransientBackendError), (case, error)
        assert elapsed < 20, f"{case} took {elapsed:.1f} s"
        assert "ls-remote" in _assert_one_line(error)


def test_doctor_reports_a_blackhole_as_a_failed_row(open_backend: Opener) -> None:
    with blackhole("silent") as url:
        backend = open_backend(url)
        started = time.monotonic()
        with deadline.running(deadline.Deadline.after(3, "doctor")):
            rows = backend.doctor()
    assert time.monotonic() - started < 10
    names = {name.split(" (")[0]: (ok, detail) for name, ok, detail in rows}
    assert names["git installed"][0]
    assert names["remote answers"][0] is False
    assert names["object size limit"][0]


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
    return found


def test_running_deadline_bounds_a_hanging_call(open_backend: Opener) -> None:
    with blackhole("silent") as url:
        backend = open_backend(url)
        started = time.monotonic()
        with deadline.running(deadline.Deadline.after(2, "status")), \
                pytest.raises(DeadlineExceeded):
            backend.read_ref("HEAD")
        assert time.monotonic() - started < 6
        # git and the helper it started (git-remote-http) were killed together.
        if Path("/proc/self/cmdline").exists():
            assert _processes_mentioning(url) == []


def test_connection_refused_is_transient_and_quick(open_backend: Opener) -> None:
    backend = open_backend(f"http://127.0.0.1:{free_port()}/store.git")
    started = time.monotonic()
    with pytest.raises(TransientBackendError) as caught:
        backend.list("data/")
    assert time.monotonic() - started < 10
    _assert_one_line(caught.value)


def test_missing_repository_is_a_clear_backend_error(tmp_path: Path,
                                                     open_backend: Opener) -> None:
    backend = open_backend(file_url(tmp_path / "nowhere.git"))
    with pytest.raises(BackendError) as caught:
        backend.read_ref("HEAD")
    assert not isinstance(caught.value, TransientBackendError)
    assert "does not appear to be a git repository" in _assert_one_line(caught.value)


def test_daemon_missing_repository_is_a_backend_error(daemon_base: str,
                                                      open_backend: Opener) -> None:
    with pytest.raises(BackendError) as caught:
        open_backend(daemon_base + "missing.git").read_ref("HEAD")
    _assert_one_line(caught.value)


@pytest.fixture
def guarded_http(tmp_path: Path):
    root = tmp_path / "served"
    root.mkdir()
    repo = bare_repo(root)
    with smart_http(root, auth=("alice", "s3cret-pw-81")) as base:
        yield base, repo.name


def test_authentication_failure_is_a_backend_error_without_credentials(
        guarded_http: tuple[str, str], open_backend: Opener) -> None:
    base, name = guarded_http
    with pytest.raises(BackendError) as caught:
        open_backend(base + name).read_ref("HEAD")
    assert not isinstance(caught.value, TransientBackendError)
    assert "authentication" in _assert_one_line(caught.value)
    wrong = base.replace("http://", "http://alice:wrong-pw-3321@") + name
    with pytest.raises(BackendError) as caught:
        open_backend(wrong).read_ref("HEAD")
    assert "authentication" in _assert_one_line(caught.value, "wrong-pw-3321")


def test_credentials_in_the_url_work_but_never_show(guarded_http: tuple[str, str],
                                                    open_backend: Opener) -> None:
    base, name = guarded_http
    url = base.replace("http://", "http://alice:s3cret-pw-81@") + name
    backend = open_backend(url)
    backend.put_new("data/a", b"1")
    version = backend.swap_ref("HEAD", b"gen-1", None)
    assert backend.read_ref("HEAD") == (b"gen-1", version)
    assert backend.identity() == f"{base}{name}#roam"
    rows = backend.doctor()
    assert "s3cret-pw-81" not in repr(rows)
    assert ("no credentials in git_remote", False) in [(n, ok) for n, ok, _d in rows]
    with pytest.raises(RefConflict) as caught:
        backend.swap_ref("HEAD", b"x", None)
    _assert_one_line(caught.value, "s3cret-pw-81")
    with pytest.raises(BackendError) as caught:
        open_backend(url.replace(name, "missing.git")).read_ref("HEAD")
    _assert_one_line(caught.value, "s3cret-pw-81")


def test_an_ssh_key_the_server_refuses_is_an_authentication_error(
        ssh_base: tuple[str, str], served_root: Path, open_backend: Opener,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BatchMode: no prompt, no hang; one line that says authentication, naming no key."""
    import subprocess

    base, command = ssh_base
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)],
                   check=True, capture_output=True, timeout=30)
    monkeypatch.setenv("GIT_SSH_COMMAND", command.replace(
        command.split(" -i ", 1)[1].split(" ", 1)[0], str(stranger)))
    url = base + str(bare_repo(served_root))
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        open_backend(url).read_ref("HEAD")
    assert time.monotonic() - started < 30
    assert not isinstance(caught.value, TransientBackendError)
    assert "authentication" in _assert_one_line(caught.value, str(stranger))


def test_a_machine_without_git_gets_one_line_from_every_way_git_is_started(
        tmp_path: Path) -> None:
    """`run` (plumbing) and `talk` (a conversation over pipes) say the same one line."""
    from roam_backend_git.runner import GitRunner

    empty = tmp_path / "no-programs"
    empty.mkdir()
    runner = GitRunner(tmp_path / "mirror", {"PATH": str(empty)}, lambda text: text)
    with pytest.raises(BackendError) as ran:
        runner.run(["--version"], action="version")
    with pytest.raises(BackendError) as talked, \
            runner.talk(["upload-pack", "--", str(tmp_path)], action="fetch", cap=5.0,
                        bare=True):
        pass
    for caught in (ran, talked):
        assert _assert_one_line(caught.value) == "git is not installed or not on PATH"
