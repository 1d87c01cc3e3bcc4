"""Running git: an argv list, an allowlisted environment and a hard timeout, every time.

Each child starts in its own process group so a timeout kills git together with the
transport helpers it started (git-remote-http, ssh); otherwise a blackholed remote would
leave them hanging after roam gave up.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from roam_core.plugin import FLOOR_RATE, BackendError, DeadlineExceeded, TransientBackendError
from roam_core.plugin import deadline as _deadline

#: Config for every call: no background gc/maintenance processes outliving roam, no pager,
#: no signing prompts from a user's global `*.gpgSign`, and none of the user's hooks (a
#: global `core.hooksPath` would otherwise run them on the mirror's own ref updates).
#: git strips `-c` from the environment of a local (file://) remote's receive-pack, so the
#: remote's own hooks still run.
#: And no zlib or delta search: roam's objects are encrypted, so neither can shrink them,
#: and on a 371 MiB first push they cost minutes (deflating loose objects in `hash-object`,
#: a delta search and a level-6 deflate in the push's `pack-objects`). Level 0 stores the
#: bytes as they are; a window of 0 turns the delta search off.
#: And packs mapped in windows of 16 MiB, at most 32 MiB at once: git's default (1 GiB windows,
#: 8 GiB in all) maps a push's whole pack, and every page `pack-objects` copied stayed
#: resident: the large home's first push peaked at 379 MiB in `pack-objects` alone, its own
#: memory 0.5 MiB (tests/backend_git/test_git_memory.py).
BASE_CONFIG = ("gc.auto=0", "maintenance.auto=false", "core.pager=cat",
               "commit.gpgSign=false", "push.gpgSign=false", "credential.interactive=false",
               f"core.hooksPath={os.devnull}", "core.compression=0", "pack.window=0",
               "core.packedGitWindowSize=16m", "core.packedGitLimit=32m")
#: Transfers slower than 1 byte/s for a minute are dead (covers a stalled https stream).
NETWORK_CONFIG = ("http.lowSpeedLimit=1", "http.lowSpeedTime=60")

#: Cap for local plumbing (hash-object, cat-file, write-tree): generous, never infinite.
LOCAL_TIMEOUT = 120.0
#: What git takes out of the environment of a local remote's `upload-pack` (the list
#: `git rev-parse --local-env-vars` prints): they name the caller's repository, or carry
#: its `-c` settings, and the remote's own config governs the remote.
LOCAL_REPO_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)

_AUTH_PATTERNS = re.compile(
    r"authentication failed|permission denied|could not read (username|password)"
    r"|terminal prompts disabled|http 401|http 403|returned error: 40[13]"
    r"|host key verification failed|invalid username or password|access denied"
    r"|repository not found|not authorized",
    re.IGNORECASE,
)
#: A host (git's `receive.maxInputSize`, GitHub's 2 GiB) or the web server in front of it
#: (HTTP 413) refusing a request as too large: not a network failure, and not transient.
TOO_LARGE_PATTERNS = re.compile(
    r"pack exceeds maximum allowed size|returned error: 413|HTTP 413", re.IGNORECASE)
#: What to do about it (the setting for the size of one push).
TOO_LARGE_HINT = ("set git_max_push_mb under the host's limit (GitHub takes 2 GiB a push), "
                  "or raise the limit of the web server in front of it (nginx: "
                  "client_max_body_size), and push again")
_NETWORK_PATTERNS = re.compile(
    r"could not resolve|connection refused|connection timed out|timed out|returned error: 5\d\d"
    r"|early eof|hung up unexpectedly|operation too slow|network is unreachable"
    r"|no route to host|connection reset|broken pipe|could not connect|failed to connect"
    r"|rpc failed|remote end hung up|temporary failure|unexpected disconnect",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GitResult:
    """What one git call returned."""

    returncode: int
    stdout: bytes
    stderr: str


#: Lines git adds to every transport failure; the real reason is on another line.
_BOILERPLATE = ("could not read from remote repository", "please make sure you have",
                "and the repository exists", "failed to push some refs")


def one_line(stderr: str) -> str:
    """The line of git's stderr that says what went wrong, without its `fatal:` prefix."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    useful = [line for line in lines
              if not any(text in line.lower() for text in _BOILERPLATE)] or lines
    for marker in ("fatal:", "error:", "ssh:", "remote:"):
        chosen = [line for line in useful if line.lower().startswith(marker)]
        if chosen:
            line = chosen[0]
            return line.split(":", 1)[1].strip() if marker in ("fatal:", "error:") else line
    return useful[-1] if useful else "no message"


def auth_hint(stderr: str, transport: str) -> str:
    """What the user can do about an authentication failure on `transport`."""
    if "host key verification failed" in stderr.lower():
        return " (connect once with ssh to that host to check and accept its host key)"
    if transport == "ssh":
        return " (check your ssh key and agent: roam runs ssh with BatchMode=yes)"
    if transport == "http":
        return " (check your git credential helper; roam never asks for a password)"
    return ""


def transfer_budget(timeout: float, size: int) -> float:
    """Seconds a transfer of `size` bytes may take: `timeout`, or its time at the floor rate.

    `git_transfer_timeout` bounds one fetch or push; a large one on a slow link (1 GiB at
    1 MB/s) needs longer, and core's deadline already allows for it at `FLOOR_RATE`.
    """
    return max(timeout, size / FLOOR_RATE)


def classify(action: str, stderr: str, redact: Callable[[str], str],
             transport: str = "") -> BackendError:
    """Turn a failed network call's stderr into roam's error tree, credentials cut out."""
    detail = redact(one_line(stderr))
    too_large = TOO_LARGE_PATTERNS.search(stderr)
    if too_large:
        return BackendError(f"git {action}: the host refused it as too large "
                            f"({too_large.group(0)}); {TOO_LARGE_HINT}")
    if _AUTH_PATTERNS.search(stderr):
        return BackendError(f"git {action}: authentication failed or access denied: {detail}"
                            + auth_hint(stderr, transport))
    if _NETWORK_PATTERNS.search(stderr):
        return TransientBackendError(f"git {action}: remote unreachable: {detail}")
    return BackendError(f"git {action} failed: {detail}")


def _start(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(argv, **options)`; a git that cannot start is one `BackendError`."""
    try:
        return subprocess.Popen(argv, **options)
    except FileNotFoundError:
        raise BackendError("git is not installed or not on PATH") from None
    except OSError as error:
        raise BackendError(f"cannot run git: {error.strerror or error}") from None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


class GitChild:
    """A git child roam talks to over its pipes, killed with its group when its time is up.

    stderr goes to an unnamed temporary file (no pipe for the child to fill while roam reads
    stdout); `arm` (re)starts the watchdog, which kills the process group, so a read blocked
    on a stalled child ends at once with end of file.
    """

    def __init__(self, process: subprocess.Popen[bytes], errors: IO[bytes],
                 runner: GitRunner, action: str) -> None:
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.runner = runner
        self.action = action
        self.started = time.monotonic()
        self.timed_out = False
        self._errors = errors
        self._timer: threading.Timer | None = None

    def arm(self, cap: float) -> None:
        """Allow the child `cap` seconds more (bounded by the operation's deadline)."""
        self.disarm()
        self._timer = threading.Timer(self.runner.timeout(cap), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self.timed_out = True
        _kill_group(self.process)

    def stderr(self) -> str:
        """What the child wrote to stderr so far."""
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", "replace")

    def wait(self, cap: float = 5.0) -> int:
        """The child's exit status once it ends (killed after `cap` seconds)."""
        try:
            return self.process.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            _kill_group(self.process)
            return self.process.wait()

    def failure(self, what: str = "") -> BackendError:
        """Why the conversation ended early: the timeout, git's stderr, or `what`."""
        if self.timed_out:
            return self.runner._timed_out(self.action, time.monotonic() - self.started)
        if self.process.poll() is None:
            self.wait()
        stderr = self.stderr()
        if stderr.strip():
            return classify(self.action, stderr, self.runner.redact, self.runner.transport)
        return TransientBackendError(f"git {self.action}: remote unreachable: "
                                     f"{what or 'the connection ended early'}")


class GitRunner:
    """Runs git against one bare repository with a fixed child environment."""

    def __init__(self, git_dir: Path | None, env: Mapping[str, str],
                 redact: Callable[[str], str],
                 deadline: _deadline.Deadline | None = None, transport: str = "") -> None:
        self.git_dir = git_dir
        self.transport = transport
        self.env = dict(env)
        self.redact = redact
        self.fallback_deadline = deadline

    def timeout(self, cap: float) -> float:
        """`cap` bounded by the running operation's deadline (DeadlineExceeded if spent)."""
        current = _deadline.current() or self.fallback_deadline
        return cap if current is None else current.timeout(cap)

    def argv(self, args: Sequence[str], network: bool) -> list[str]:
        argv = ["git"]
        for item in (*BASE_CONFIG, *(NETWORK_CONFIG if network else ())):
            argv += ["-c", item]
        if self.git_dir is not None:
            argv.append(f"--git-dir={self.git_dir}")
        return argv + list(args)

    def run(self, args: Sequence[str], *, action: str, cap: float = LOCAL_TIMEOUT,
            input: bytes | None = None, network: bool = False, check: bool = True,
            env: Mapping[str, str] | None = None,
            received: Callable[[], int] | None = None) -> GitResult:
        """Run `git args`; raise a `BackendError` subclass on failure when `check`.

        `received`: the bytes the transfer has brought so far (a fetch's incoming pack). Its
        time at the floor rate extends `cap` while it grows (`transfer_budget`); a stall
        still ends it.
        """
        child_env = dict(self.env, **env) if env else self.env
        cwd = self.git_dir if self.git_dir is not None and self.git_dir.is_dir() else None
        process = _start(self.argv(args, network), stdin=subprocess.PIPE if input is not None
                         else subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=child_env, cwd=cwd,
                         start_new_session=True)
        started = time.monotonic()
        try:
            stdout, stderr = self._communicate(process, input, cap, started, received)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=5)
            raise self._timed_out(action, time.monotonic() - started) from None
        except BaseException:
            _kill_group(process)
            process.wait()
            raise
        result = GitResult(process.returncode, stdout, stderr.decode("utf-8", "replace"))
        if check and result.returncode != 0:
            if network:
                raise classify(action, result.stderr, self.redact, self.transport)
            raise BackendError(f"git {action} failed: {self.redact(one_line(result.stderr))}")
        return result

    def _communicate(self, process: subprocess.Popen[bytes], input: bytes | None, cap: float,
                     started: float, received: Callable[[], int] | None) -> tuple[bytes, bytes]:
        """`process.communicate` within `cap`, moved on by what `received` says has come."""
        if received is None:
            return process.communicate(input, timeout=self.timeout(cap))
        while True:
            budget = transfer_budget(cap, received()) - (time.monotonic() - started)
            if budget <= 0:
                raise subprocess.TimeoutExpired(process.args, cap)
            try:  # `communicate` again after a timeout loses nothing (subprocess docs)
                return process.communicate(input, timeout=min(self.timeout(budget), 1.0))
            except subprocess.TimeoutExpired:
                input = None  # sent already

    @contextlib.contextmanager
    def talk(self, args: Sequence[str], *, action: str, cap: float, network: bool = True,
             bare: bool = False, raw: bool = False,
             env: Mapping[str, str] | None = None) -> Iterator[GitChild]:
        """Start `git args` with pipes to talk to; it has `cap` seconds until `arm` says more.

        `bare`: no `-c` settings, no `--git-dir` and none of `LOCAL_REPO_ENV`, as git starts
        the `upload-pack` of a local remote, or ssh for one (that repository's own config
        governs it); `raw`: `args` is the whole argv (ssh, as git starts it). Whatever
        happens inside, the child's group is gone (killed if still running) when the block
        ends.
        """
        child_env = dict(self.env, **env) if env else dict(self.env)
        if bare:
            for name in LOCAL_REPO_ENV:
                child_env.pop(name, None)
        argv = list(args) if raw else ["git", *args] if bare else self.argv(args, network)
        cwd = self.git_dir if self.git_dir is not None and self.git_dir.is_dir() else None
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed when the child is done)
        try:
            process = _start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=errors, env=child_env, cwd=cwd, start_new_session=True,
                             bufsize=1 << 16)
        except BackendError:
            errors.close()
            raise
        child = GitChild(process, errors, self, action)
        try:
            child.arm(cap)
            yield child
        except BaseException:
            _kill_group(process)
            raise
        finally:
            child.disarm()
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()  # type: ignore[union-attr]
            child.wait()
            errors.close()

    def _timed_out(self, action: str, elapsed: float) -> BackendError:
        current = _deadline.current() or self.fallback_deadline
        if current is not None and current.expired():
            return DeadlineExceeded(f"git {action}: {current.operation} ran out of time "
                                    f"after {elapsed:.0f} s")
        return TransientBackendError(f"git {action}: no answer within {elapsed:.0f} s "
                                     "(remote unreachable or too slow)")
