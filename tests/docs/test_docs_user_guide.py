"""docs/user-guide.md, followed literally on fresh machines: every block, in order.

Three homes (desktop, laptop, new-laptop) are built as Hermes leaves them, each with its own
$HOME; then every block marked for a scenario runs in document order with the real `roam`
command, and every console block's output is checked. The only changes to the text are the
reader's own values: the shared folder, the R2 endpoint and token, the git URL and the
archive key pasted on the other machines.

- `local`: the shared-folder backend;
- `s3`: the Cloudflare R2 steps against a moto S3 server on 127.0.0.1;
- `git`: the git steps against a bare repository (file://).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_blocks import REPO, Block, blocks, console_steps, missing_lines, run_shell

GUIDE = REPO / "docs" / "user-guide.md"
SCENARIOS = ("local", "s3", "git")
MACHINES = ("desktop", "laptop", "new-laptop")
STORE_DIR = "/mnt/shared/roam-store"
R2_ENDPOINT = "https://<account-id>.r2.cloudflarestorage.com"
GIT_URL = "git@github.com:you/hermes-store.git"
SHOWN_HOME = "/home/you"

DESKTOP_CONFIG = """\
# my desktop's Hermes config
model:
  default: claude-sonnet-4
  provider: anthropic
display:
  skin: midnight
  interface: cli      # host-specific: never leaves this machine
terminal:
  backend: local
"""

HOMES: dict[str, dict[str, str]] = {
    "desktop": {
        "config.yaml": DESKTOP_CONFIG,
        "SOUL.md": "You are a patient, precise assistant. Answer in metric units.\n",
        "memories/MEMORY.md": "User prefers metric units.\n§\nProject roam lives in ~/src/roam.",
        "memories/USER.md": "Name: Sam",
        "skills/research/arxiv/SKILL.md": "---\nname: arxiv\ndescription: search papers\n---\n"
                                          "Use the arxiv API.\n",
        "skills/research/arxiv/references/api.md": "GET /api/query?search_query=...\n",
        "skins/midnight.yaml": "name: midnight\ncolors: {bg: '#000000'}\n",
        ".env": "OPENAI_API_KEY=sk-desktop-only-0123456789abcdef\n",
        "auth.json": '{"credential_pool": "stays on the desktop"}\n',
        "state.db": "SQLite format 3\0 (not really)",
        "logs/agent.log": "a log line\n",
        "sessions/20260101_120000_abcdef.json": "{}\n",
    },
    "laptop": {
        "config.yaml": "terminal:\n  backend: docker\n",
        ".env": "OPENAI_API_KEY=sk-laptop-only-fedcba9876543210\n",
        "memories/MEMORY.md": "The laptop's fan is loud under load.",
        "skills/laptop/battery/SKILL.md": "---\nname: battery\n---\nCheck the battery first.\n",
    },
    "new-laptop": {
        "config.yaml": "model:\n  default: hermes-default\n",
        "SOUL.md": "You are Hermes, a helpful assistant.\n",
    },
}


#: The shared folder runs the whole guide; the S3 and git runs stop once two machines are in
#: sync (the rest of the guide does not depend on the backend) to keep the suite quick.
LAST_BLOCK = {"local": None, "s3": "two-machines-in-sync", "git": "two-machines-in-sync"}


def guide_blocks(scenario: str) -> list[Block]:
    selected: list[Block] = []
    for block in blocks(GUIDE):
        if block.runs_in(scenario):
            selected.append(block)
            if LAST_BLOCK[scenario] and block.options.get("id") == LAST_BLOCK[scenario]:
                break
    return selected


class Reader:
    """A person following the guide on several machines."""

    def __init__(self, base: Path, scenario: str, substitutions: dict[str, str]) -> None:
        self.base = base
        self.scenario = scenario
        self.substitutions = substitutions
        self.homes = {name: base / name for name in MACHINES}
        for name, files in HOMES.items():
            for rel, text in files.items():
                path = self.homes[name] / ".hermes" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")

    def env(self, machine: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ROAM_", "HERMES_", "AWS_", "VIRTUAL_ENV"))}
        env.update(HOME=str(self.homes[machine]), LANG="C.UTF-8", LC_ALL="C.UTF-8",
                   PYTHONUNBUFFERED="1",
                   PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                         os.environ.get("PATH", "")]))
        env.update(extra)
        return env

    def fill(self, text: str) -> str:
        key_line = (self.homes["desktop"] / ".hermes" / ".env").read_text().splitlines()
        keys = [line.split("=", 1)[1] for line in key_line if line.startswith("ROAM_ARCHIVE_KEY=")]
        if keys:
            text = text.replace("<paste your key here>", keys[0])
        for placeholder, value in self.substitutions.items():
            text = text.replace(placeholder, value)
        return text

    def shown(self, machine: str, output: str) -> str:
        """The output as the guide shows it: the reader's home is /home/you."""
        return output.replace(str(self.homes[machine]), SHOWN_HOME)

    def run(self, block: Block) -> None:
        machine = block.options["on"]
        setup = block.options.get("setup")
        if setup:
            SETUPS[setup](self, machine)
        if "file" in block.options:
            target = Path(block.options["file"].replace("~", str(self.homes[machine]), 1))
            target.write_text(block.text, encoding="utf-8")
        elif block.lang == "console":
            for command, expected in console_steps(block.text):
                started = time.monotonic()
                result = run_shell(self.fill(command), self.env(machine), self.homes[machine])
                output = self.shown(machine, result.stdout)
                print(f"[{machine} {time.monotonic() - started:.1f}s]$ {command}\n{output}")
                context = f"{block.where} [{self.scenario}] on {machine}: $ {command}\n{output}"
                assert result.returncode == 0, f"exit {result.returncode}: {context}"
                missing = missing_lines(expected, output)
                assert not missing, f"expected line {missing[0]!r} not shown: {context}"
        else:
            script = "set -e\n" + self.fill(block.text)
            result = run_shell(script, self.env(machine), self.homes[machine])
            assert result.returncode == 0, (f"{block.where} [{self.scenario}] on {machine}: "
                                            f"exit {result.returncode}\n{result.stdout}")


def _roam(reader: Reader, machine: str, *args: str, **env: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "roam"), *args],
                          env=reader.env(machine, **env), capture_output=True, text=True,
                          timeout=300, cwd=reader.homes[machine])


def _crash_during_pull(reader: Reader, machine: str) -> None:
    """The desktop publishes a skill update; `roam pull --apply` here dies before committing."""
    skill = reader.homes["desktop"] / ".hermes" / "skills" / "research" / "arxiv" / "SKILL.md"
    skill.write_text(skill.read_text() + "Prefer the newest version of a paper.\n")
    pushed = _roam(reader, "desktop", "push")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    killed = _roam(reader, machine, "pull", "--apply", ROAM_TEST_KILL_AT="journal:installed")
    assert killed.returncode == -9, killed.stdout + killed.stderr


SETUPS = {"crash-during-pull": _crash_during_pull}


@contextlib.contextmanager
def _remote(scenario: str, base: Path) -> Iterator[dict[str, str]]:
    if scenario == "local":
        yield {STORE_DIR: str(base / "shared" / "roam-store")}
    elif scenario == "s3":
        from support.s3_servers import moto_server

        with moto_server() as server:
            server.client().create_bucket(Bucket="my-hermes-store")  # step 1, in the dashboard
            yield {R2_ENDPOINT: server.endpoint_url, "<access-key-id>": server.access_key_id,
                   "<secret-access-key>": server.secret_access_key}
    else:
        bare = base / "hermes-store.git"
        subprocess.run(["git", "init", "--bare", "--quiet", str(bare)], check=True)
        yield {GIT_URL: bare.as_uri()}


@pytest.mark.parametrize("scenario", ["local", pytest.param("s3", marks=pytest.mark.slow),
                                      pytest.param("git", marks=pytest.mark.slow)])
def test_following_the_user_guide(scenario: str, tmp_path: Path) -> None:
    with _remote(scenario, tmp_path) as substitutions:
        reader = Reader(tmp_path, scenario, substitutions)
        for block in guide_blocks(scenario):
            reader.run(block)
    assert LAST_BLOCK[scenario] is None or block.options.get("id") == LAST_BLOCK[scenario]
    desktop, laptop = (reader.homes[name] / ".hermes" for name in ("desktop", "laptop"))
    # What the guide promises at the end: the same shared files, the secrets where they were.
    for rel in ("SOUL.md", "memories/MEMORY.md", "skills/research/arxiv/SKILL.md",
                "skills/laptop/battery/SKILL.md", "skins/midnight.yaml"):
        assert (desktop / rel).read_bytes() == (laptop / rel).read_bytes(), rel
    assert "sk-laptop-only" in (laptop / ".env").read_text()
    assert "sk-desktop-only" not in (laptop / ".env").read_text()
    for never in ("auth.json", "state.db", "logs/agent.log", "sessions"):
        assert not (laptop / never).exists(), never
    laptop_config = (laptop / "config.yaml").read_text()
    assert "docker" in laptop_config  # its own terminal, never replaced
    assert "skin: midnight" in laptop_config  # the desktop's host key deletes nothing here


def test_every_runnable_block_runs_in_some_scenario() -> None:
    runnable = [block for block in blocks(GUIDE) if "on" in block.options]
    assert runnable
    for block in runnable:
        assert block.options["on"] in MACHINES, block.where
        assert any(block.runs_in(s) for s in SCENARIOS), f"{block.where} runs nowhere"
        assert block.options.get("setup", "crash-during-pull") in SETUPS, block.where


def test_guide_shows_the_memory_merge_plan_line() -> None:
    text = GUIDE.read_text()
    assert "merged memories: memories/MEMORY.md (+2 remote, 0 kept local)" in text
