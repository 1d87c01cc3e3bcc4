"""A remote that never answers: `status`, `push` and `pull` fail within 20 s with the real error.

Blackholes from tests/support: `silent` accepts and never answers (a read hang), `syndrop`
never completes the connect. Each home is set up against a real server first, then pointed
at a blackhole, and every command runs as a real process, all of them side by side (each
timed from inside, once Python has started: 20 s is roam's bound, start-up is the OS's). The
automatic push that Hermes's session-end hook starts fails just as fast and leaves the
failure pending; the hook itself returns at once.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from campaign.harness import Home, Runner, fast_dir, settings_yaml, stores

from support import git_remotes, s3_servers

pytest_plugins = ("support.s3_servers",)

BOUND = 20.0
STAGGER = 0.3
#: The command timed from inside the process, once Python and roam are loaded: on a busy CI
#: machine interpreter start-up alone can take seconds, and that is not what is under test.
TIMED = """
import sys, time
from roam_core.cli.main import main
started = time.monotonic()
try:
    code = main(sys.argv[1:])
finally:
    sys.stderr.write(f"\\nroam-test-elapsed {time.monotonic() - started:.3f}\\n")
sys.exit(code)
"""
VERBS = (("status",), ("push",), ("pull", "--apply"))
#: (backend, blackhole mode, URL scheme): S3 over http, git over smart http and git://.
CASES = (("s3", "silent", "http"), ("s3", "syndrop", "http"), ("git", "silent", "http"),
         ("git", "syndrop", "http"), ("git", "syndrop", "git"))


def _pointed(home: Home, url: str) -> None:
    """Point an initialised home at `url` instead of its real remote."""
    key = "s3_endpoint_url" if home.store.kind == "s3" else "git_remote"
    home.settings = {**home.settings, key: url}
    home.write("config.yaml", settings_yaml(home.name, home.settings))


@pytest.fixture
def homes(request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, ...], Home]]:
    """One home per case and verb, each initialised, then pointed at its blackhole."""
    with contextlib.ExitStack() as stack:
        root = stack.enter_context(fast_dir("roam-failfast-"))
        made: dict[tuple[str, ...], Home] = {}
        for kind in ("s3", "git"):
            store = stack.enter_context(stores(kind, root / kind, request))
            seed = Home(root / kind / "seed", "seed", store, Runner())
            seed.write("SOUL.md", "soul\n")
            assert seed.roam("init", "--create-remote").code == 0
            assert seed.roam("push").code == 0
            seed.write("SOUL.md", "soul, changed\n")
            for backend, mode, scheme in CASES:
                if backend != kind:
                    continue
                url = stack.enter_context(_blackhole(kind, mode)).replace("http://",
                                                                          f"{scheme}://")
                for verb in VERBS:
                    case = (backend, mode, scheme, verb[0])
                    home = seed.copy(root / kind / "-".join(case))
                    _pointed(home, url)
                    made[case] = home
        yield made


def _blackhole(kind: str, mode: str) -> Any:
    return (s3_servers.blackhole if kind == "s3" else git_remotes.blackhole)(mode)


@pytest.mark.slow
def test_cli_verbs_fail_fast_with_the_real_error(homes: dict[tuple[str, ...], Home]) -> None:
    wave = homes
    outcomes = _run_together(wave)
    for case, (elapsed, code, _out, err) in outcomes.items():
        assert elapsed < BOUND, f"{case}: {elapsed:.1f} s: {err}"
        assert code == 1, (case, code, err)
        assert "Traceback" not in err, (case, err)
        line = err.strip().splitlines()[-1]
        assert line.startswith("roam: "), (case, err)
        url = wave[case].settings.get("s3_endpoint_url") or wave[case].settings["git_remote"]
        port = url.rsplit(":", 1)[1].split("/")[0]
        real = ("ReadTimeoutError", "ConnectTimeoutError", "ls-remote: no answer", port)
        assert any(word in line for word in real), (case, line)
        secret = wave[case].store.secrets.get("ROAM_S3_SECRET_ACCESS_KEY")
        assert secret is None or secret not in err


def _run_together(homes: dict[tuple[str, ...], Home]
                  ) -> dict[tuple[str, ...], tuple[float, int, str, str]]:
    """Run every case's verb side by side; time each process from its own start to its end.

    The starts are a moment apart, so fifteen interpreters do not share two cores while
    they import; after that each one only waits on its socket.
    """
    procs = {}
    for case, home in homes.items():
        time.sleep(STAGGER)
        verb = next(v for v in VERBS if v[0] == case[3])
        argv = [sys.executable, "-c", TIMED, "--home", str(home.root), *verb]
        procs[case] = (time.monotonic(), subprocess.Popen(
            argv, env=home.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outcomes: dict[tuple[str, ...], tuple[float, int, str, str]] = {}
    give_up = time.monotonic() + 60
    while len(outcomes) < len(procs):
        for case, (started, proc) in procs.items():
            if case not in outcomes and proc.poll() is not None:
                out, err = proc.communicate()
                err, _, timed = err.rpartition("roam-test-elapsed ")
                assert time.monotonic() - started < 2 * BOUND, (case, "slow even to start")
                outcomes[case] = (float(timed), proc.returncode, out, err)
        if time.monotonic() > give_up:
            for _started, proc in procs.values():
                proc.kill()
            raise AssertionError(f"still running after 60 s: {set(procs) - set(outcomes)}")
        time.sleep(0.05)
    return outcomes


@pytest.mark.slow
def test_the_automatic_push_from_a_hook_never_hangs(request: pytest.FixtureRequest,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_core.hermes import autosync
    from roam_core.service import autostate

    with fast_dir("roam-failfast-hook-") as root, stores("s3", root, request) as store, \
            s3_servers.blackhole("silent") as url:
        home = Home(root / "home", "home", store, Runner(), auto_push=True,
                    push_debounce_seconds=0)
        home.write("SOUL.md", "soul\n")
        assert home.roam("init", "--create-remote").code == 0
        _pointed(home, url)
        home.write("SOUL.md", "changed after the last push\n")
        for name, value in store.env().items():
            monkeypatch.setenv(name, value)
        started = time.monotonic()
        assert autosync.session_end(home.root) == "started"
        # generous for a loaded 2-core machine (a CI run beside other work saw 1.9 s); the
        # blackhole would hold a waiting hook for the connect budget, 15 s
        assert time.monotonic() - started < 3.0, "the hook itself must not wait"
        thread = autosync.jobs.push
        assert thread is not None
        thread.join(BOUND + 5)
        elapsed = time.monotonic() - started
        assert not thread.is_alive() and elapsed < BOUND, f"{elapsed:.1f} s"
        pending = autostate.load(home.root).get("pending") or {}
        assert "timed out" in str(pending.get("reason")).lower() or \
            url.rsplit(":", 1)[1] in str(pending.get("reason")), pending

