"""Verbs run in-process with per-thread capture; failures come back as results."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import support.inprocess as runner
from roam_core.errors import ConflictError, LockedError
from support.inprocess import captured, run_verb


def test_json_verb_and_exit_code(make_home: Callable[..., Path]) -> None:
    root = make_home("a")
    result = run_verb(["auto", "status", "--json"], home=root)
    assert result.ok and result.code == 0
    assert result.json()["auto_push"] is False
    assert result.error == "" and result.stderr == ""


def test_usage_error_is_a_result_not_an_exit(make_home: Callable[..., Path]) -> None:
    result = run_verb(["no-such-verb"], home=make_home("a"))
    assert result.code == 1 and result.error_kind == "UsageError"
    assert "invalid choice" in result.error
    assert result.json() is None


def test_roam_errors_keep_their_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_parser() -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser()
        parser.add_argument("--home")
        sub = parser.add_subparsers(dest="command")
        for name, error in (("locked", LockedError("held\nsecond line")),
                            ("conflict", ConflictError("remote ahead")),
                            ("bug", KeyError("boom"))):
            def func(args: argparse.Namespace, error: Exception = error) -> int:
                print("partial output")
                raise error
            sub.add_parser(name).set_defaults(func=func)
        return parser

    import roam_core.cli.main as cli_main

    monkeypatch.setattr(cli_main, "build_parser", fake_parser)
    locked = run_verb(["locked"])
    assert (locked.code, locked.error, locked.error_kind) == (1, "held", "LockedError")
    assert locked.stdout == "partial output\n"
    assert locked.stderr == "roam: held\n"
    conflict = run_verb(["conflict"])
    assert conflict.conflict and conflict.error_kind == "ConflictError"
    bug = run_verb(["bug"])
    assert bug.code == 1 and bug.error_kind == "KeyError"
    assert "internal error" in bug.error


def test_capture_is_per_thread(capsys: pytest.CaptureFixture[str]) -> None:
    original = sys.stdout
    started, release = threading.Event(), threading.Event()
    seen: dict[str, str] = {}

    def worker() -> None:
        with captured() as (out, _):
            print("from the verb thread")
            started.set()
            release.wait(5)
            print("still captured")
        seen["out"] = out.getvalue()

    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(5)
    print("from the main thread")           # must not end up in the verb's buffer
    release.set()
    thread.join(5)
    assert seen["out"] == "from the verb thread\nstill captured\n"
    assert "from the main thread" in capsys.readouterr().out
    assert sys.stdout is original            # the router is removed once unused


def test_nested_and_concurrent_capture_restore_streams() -> None:
    original_out, original_err = sys.stdout, sys.stderr
    with captured() as (outer, _):
        print("outer")
        with captured() as (inner, _):
            print("inner")
        print("outer again")
    assert (outer.getvalue(), inner.getvalue()) == ("outer\nouter again\n", "inner\n")
    assert (sys.stdout, sys.stderr) == (original_out, original_err)
    assert runner._installed == 0
