"""`roam demo`: roam's main job, end to end, on the local backend in a folder it names.

Two Hermes-shaped homes (a desktop and a laptop) share one local store. The desktop
pushes, the laptop reviews the plan and installs it, both learn something new, and the
memories merge entry by entry. Secrets and host settings stay where they were written.
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
from pathlib import Path

DESKTOP_CONFIG = """\
# the desktop's Hermes config
model:
  default: big-model
  provider: custom
display:
  skin: midnight        # shared: both machines use the same skin
terminal:
  backend: local        # host-specific: never leaves this machine
plugins:
  entries:
    roam:
      settings:
        backend: local
        local_dir: {store}
        device_name: desktop
"""

LAPTOP_CONFIG = """\
# the laptop's own config: its terminal differs
terminal:
  backend: docker
plugins:
  entries:
    roam:
      settings:
        backend: local
        local_dir: {store}
        device_name: laptop
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _build(base: Path) -> tuple[Path, Path, Path]:
    store, desktop, laptop = base / "store", base / "desktop", base / "laptop"
    store.mkdir(parents=True, exist_ok=True)
    _write(desktop / "config.yaml", DESKTOP_CONFIG.format(store=store))
    _write(desktop / "SOUL.md", "You are a patient, precise assistant.\n")
    _write(desktop / "memories" / "MEMORY.md", "User prefers metric units.\n§\n"
           "Project roam lives in ~/src/roam.\n")
    _write(desktop / "memories" / "USER.md", "Name: Sam\n")
    _write(desktop / "skills" / "research" / "arxiv" / "SKILL.md",
           "---\nname: arxiv\ndescription: search papers\n---\nUse the arxiv API.\n")
    _write(desktop / "skins" / "midnight.yaml", "name: midnight\ncolors: {bg: '#000'}\n")
    _write(desktop / ".env", "OPENAI_API_KEY=sk-demo-secret-stays-on-the-desktop\n")
    _write(desktop / "auth.json", '{"pool": "stays here"}\n')
    _write(laptop / "config.yaml", LAPTOP_CONFIG.format(store=store))
    _write(laptop / ".env", "OPENAI_API_KEY=sk-the-laptops-own-key\n")
    return store, desktop, laptop


def _step(title: str) -> None:
    print(f"\n== {title}")


def _roam(home: Path, *args: str) -> None:
    from roam_core.cli.main import main

    shown = " ".join(("roam", "--home", home.name, *args))
    print(f"$ {shown}")
    code = main(["--home", str(home), *args])
    if code != 0:
        raise _StepFailed(f"{shown} exited {code}")


def _check_backend() -> None:
    from roam_core.errors import PluginError, UserError
    from roam_core.manager import get_manager

    try:
        get_manager().backend("local")
    except PluginError:
        raise UserError("roam demo needs the local backend: pip install 'roam-core[local]'") \
            from None


class _StepFailed(Exception):
    """A demo step exited non-zero; the later steps would only fail on its leftovers."""


def _run(args: argparse.Namespace) -> int:
    _check_backend()  # before anything is created: one line says what to install
    temporary = not args.dir
    base = Path(args.dir).absolute() if args.dir else Path(tempfile.mkdtemp(prefix="roam-demo-"))
    if base.exists() and any(base.iterdir()):
        base = base / f"demo-{secrets.token_hex(3)}"
    try:
        _play(base)
        failed = None
    except _StepFailed as step:
        failed = str(step)
    finally:
        if temporary and not args.keep:
            import shutil

            shutil.rmtree(base, ignore_errors=True)
            print(f"\nroam demo: removed {base} (run with --keep to look around afterwards)")
        else:
            print(f"\nroam demo: kept {base}")
    if failed:
        from roam_core.errors import UserError

        raise UserError(f"roam demo stopped: {failed}")
    print("roam demo: done")
    return 0


def _play(base: Path) -> None:
    os.environ["ROAM_ARCHIVE_KEY"] = secrets.token_urlsafe(32)  # this process only
    _store, desktop, laptop = _build(base)
    print(f"roam demo in {base}: two homes (desktop, laptop) and a local store")
    _step("the desktop founds the fleet and pushes its shared files")
    _roam(desktop, "init", "--create-remote")
    _roam(desktop, "push")
    _step("the laptop joins and reviews what a pull would change (nothing is written yet)")
    _roam(laptop, "init")
    _roam(laptop, "pull")
    _step("the laptop installs it: journaled, backed up, roll-back-able")
    _roam(laptop, "pull", "--apply")
    _step("both machines learn something new, offline")
    _write(laptop / "memories" / "MEMORY.md",
           (laptop / "memories" / "MEMORY.md").read_text() + "§\nLaptop battery dies fast.\n")
    _write(desktop / "memories" / "MEMORY.md",
           (desktop / "memories" / "MEMORY.md").read_text() + "§\nDesktop has the GPU.\n")
    for home, *words in ((laptop, "push"), (desktop, "pull", "--apply"), (desktop, "push"),
                         (laptop, "pull", "--apply")):
        _roam(home, *words)
    _step("the result")
    _show(desktop, laptop)


def _show(desktop: Path, laptop: Path) -> None:
    from roam_core.merge.memory import parse_entries

    rows: list[tuple[str, str]] = []
    for rel in ("SOUL.md", "skills/research/arxiv/SKILL.md", "skins/midnight.yaml",
                "memories/MEMORY.md", "memories/USER.md"):
        same = (laptop / rel).exists() and (laptop / rel).read_bytes() == (
            desktop / rel).read_bytes()
        rows.append((rel, "same on both machines" if same else "DIFFERS"))
    entries = parse_entries((laptop / "memories" / "MEMORY.md").read_bytes()) or []
    rows.append(("memories/MEMORY.md entries", f"{len(entries)} (both machines' kept)"))
    own_key = "laptops-own" in (laptop / ".env").read_text()
    rows.append((".env", "each machine keeps its own" if own_key else "LEAKED"))
    rows.append(("auth.json", "LEAKED" if (laptop / "auth.json").exists() else "never left"))
    docker = "docker" in (laptop / "config.yaml").read_text()
    rows.append(("config.yaml terminal", "laptop keeps docker" if docker else "OVERWRITTEN"))
    skin = "midnight" in (laptop / "config.yaml").read_text()
    rows.append(("config.yaml display.skin", "merged in" if skin else "missing"))
    for rel, verdict in rows:
        print(f"  {rel:32} {verdict}")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="sync two demo homes through a local store and show each step")
    parser.add_argument("--dir", help="where to build the demo (default: a new temp folder, "
                        "removed at the end)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder to look around afterwards")
    parser.set_defaults(func=_run)

