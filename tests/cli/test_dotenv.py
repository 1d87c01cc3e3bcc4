"""`.env` is read as Hermes reads it (python-dotenv), keeping only roam's own variables."""

from __future__ import annotations

import json
from pathlib import Path

from roam_core.secrets import get_secret
from support.hermes_env import ensure_hermes_venv

#: Quotes, `export`, comments, a multiline value and escapes; every one a trap for a
#: hand-written parser. Non-roam lines are there to show they are never returned.
DOTENV = r"""# fleet secrets
OPENAI_API_KEY=sk-not-roams
export ROAM_EXPORTED=plain-value
ROAM_ARCHIVE_KEY="0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"  # fleet key
ROAM_SINGLE='single # not a comment'
ROAM_UNQUOTED=bare value # trailing comment
ROAM_ESCAPES="tab\there \"quoted\" back\\slash"
ROAM_MULTI="first line
second line"
ROAM_EMPTY=
   ROAM_SPACED   =   spaced
"""

NAMES = ["ROAM_EXPORTED", "ROAM_ARCHIVE_KEY", "ROAM_SINGLE", "ROAM_UNQUOTED", "ROAM_ESCAPES",
         "ROAM_MULTI", "ROAM_EMPTY", "ROAM_SPACED"]


def _roam_reading(root: Path, monkeypatch) -> dict[str, str | None]:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    return {name: get_secret(name, root) for name in NAMES}


def test_dotenv_values_are_read_like_python_dotenv(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    seen = _roam_reading(tmp_path, monkeypatch)
    assert seen["ROAM_ARCHIVE_KEY"] == "0123456789abcdef" * 4  # no quotes, no comment
    assert seen["ROAM_SINGLE"] == "single # not a comment"
    assert seen["ROAM_UNQUOTED"] == "bare value"
    assert seen["ROAM_ESCAPES"] == 'tab\there "quoted" back\\slash'
    assert seen["ROAM_MULTI"] == "first line\nsecond line"
    assert seen["ROAM_EXPORTED"] == "plain-value"
    assert seen["ROAM_SPACED"] == "spaced"
    assert get_secret("OPENAI_API_KEY", tmp_path) is None  # only roam's variables


def test_dotenv_reading_agrees_with_hermes(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    venv = ensure_hermes_venv()
    # Hermes's own start-up loader, in Hermes's own environment, on the same home
    script = ("import json, os, sys\n"
              "from hermes_cli.env_loader import load_hermes_dotenv\n"
              "load_hermes_dotenv(hermes_home=sys.argv[1])\n"
              f"print(json.dumps({{n: os.environ.get(n) for n in {NAMES!r}}}))\n")
    import subprocess

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([str(venv.python), "-c", script, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hermes = json.loads(done.stdout.strip().splitlines()[-1])
    ours = _roam_reading(tmp_path, monkeypatch)
    # an empty value is "unset" to roam (it never returns an empty secret)
    assert {k: v or None for k, v in hermes.items()} == ours
