"""The campaign's devices and the checks every roam command must pass, whatever it did.

`FleetRun.command` runs one roam command on one device and then checks what may never
happen: a local edit vanishing without being pushed or backed up (P1), a file roam must
not touch (local-only, secrets, paths hidden by the device's rules) changing, a command that
only reads changing the home, a temp file left behind.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from campaign.harness import Home, Result, Runner, Store, settings_yaml
from campaign.model import CONFIG, MEMORY, DeviceModel, FleetModel

SHARED_POOL = ("SOUL.md", "skills/alpha/SKILL.md", "skills/alpha/notes.md",
               "skills/beta/SKILL.md", "skills/beta/ref/data.txt", "skills/private/SKILL.md",
               "skills/private/keys.txt", "skins/dark.yaml", "skins/light.yaml")
LOCAL_POOL = ("notes/todo.md", "notes/ideas.md", "logs/agent.log", "sessions/s1.json")
SECRET_FILES = (".env", "auth.json", "state.db")
NARROW_ALWAYS = ("skills/private/",)
NARROW_TOGGLE = ("skins/",)
WORDS = ("alpha", "beta", "gamma", "delta", "sky", "river", "stone", "lamp", "quiet", "swift",
         "orbit", "maple", "cobalt", "ember", "lunar", "prism", "tidal", "vivid", "amber")
READ_ONLY = {"status", "check", "history", "diff", "devices"}


@dataclass
class Device:
    home: Home
    model: DeviceModel
    canary_config: str = ""


class FleetRun:
    """Three devices on one store (the third with narrower rules) and their model."""

    #: every install's backup folder is kept, so a replaced version is always findable
    BACKUP_KEEP = 100000

    def __init__(self, store: Store, root: Path, rng: random.Random, runner: Runner) -> None:
        self.store = store
        self.root = root
        self.rng = rng
        self.runner = runner
        self.fleet = FleetModel()
        self.canaries: set[str] = set()
        self.log: list[str] = []
        self.devices: list[Device] = []
        #: (device, path, bytes): never-pushed versions an install replaced outright (not
        #: merged), whose only copy is the device's backup
        self.only_in_backups: list[tuple[Device, str, bytes]] = []

    # -- content -----------------------------------------------------------------------------

    def canary(self) -> str:
        token = f"CANARY{self.rng.getrandbits(64):016x}"
        self.canaries.add(token)
        return token

    def text(self, lines: int | None = None) -> bytes:
        count = lines if lines is not None else self.rng.randint(1, 12)
        return "".join(" ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 9)))
                       + "\n" for _ in range(count)).encode()

    def private(self, dev: Device, rel: str) -> bool:
        """Content that must never leave this device: it carries a canary."""
        return rel in LOCAL_POOL or (dev.model.narrow
                                     and any(rel.startswith(p) for p in NARROW_ALWAYS))

    def content(self, dev: Device, rel: str) -> bytes:
        data = self.text()
        if self.private(dev, rel):
            data += f"secret note {self.canary()}\n".encode()
        return data

    # -- setup -------------------------------------------------------------------------------

    def setup(self) -> None:
        names = ("desk", "laptop", "phone")
        for index, name in enumerate(names):
            narrow = index == 2
            home = Home(self.root / name, name, self.store, self.runner,
                        backup_keep=self.BACKUP_KEEP)
            dev = Device(home, DeviceModel(name, narrow=narrow,
                                           local_rules=NARROW_ALWAYS if narrow else ()))
            self.devices.append(dev)
            dev.model.host = {"display.interface": f"cli-{name}", "terminal.shell": f"sh-{name}"}
            dev.canary_config = self.canary()
            self.write_config(dev, {"model": {"default": "m0"},
                                    "agent": {"max_turns": 3, "personality": "calm"},
                                    "display": {"skin": "plain"}})
            home.write(".env", f"OPENAI_API_KEY=sk-{self.canary()}\n")
            home.write("auth.json", json.dumps({"token": self.canary()}))
            home.write("state.db", b"SQLite format 3\x00" + self.canary().encode())
            if narrow:
                self.write_rules(dev)
        desk = self.devices[0]
        for rel in ("SOUL.md", "skills/alpha/SKILL.md", "memories/MEMORY.md"):
            desk.home.write(rel, self.memory_text(3) if rel in MEMORY else self.text())
        self.expect(self.command(0, "init", "--create-remote"), 0, "init")
        desk.model.synced = 0  # the founder stands at the empty generation 0
        for index in (1, 2):
            self.expect(self.command(index, "init"), 0, "init")

    def memory_text(self, count: int) -> bytes:
        return "\n§\n".join(self.entry() for _ in range(count)).encode()

    def entry(self) -> str:
        return f"note {self.rng.getrandbits(48):012x}: " + " ".join(
            self.rng.choice(WORDS) for _ in range(self.rng.randint(2, 8)))

    def write_config(self, dev: Device, shared: dict[str, Any]) -> None:
        data: dict[str, Any] = {**shared}
        display = dict(data.get("display") or {})
        display["interface"] = dev.model.host["display.interface"]
        data["display"] = display
        data["terminal"] = {"shell": dev.model.host["terminal.shell"]}
        data["providers"] = {"openai": {"api_key": f"sk-{dev.canary_config}"}}
        text = settings_yaml(dev.model.name, dev.home.settings)
        dev.home.write(CONFIG, text + yaml.safe_dump(data, sort_keys=False))

    def read_config(self, dev: Device) -> dict[str, Any]:
        data = yaml.safe_load((dev.home.root / CONFIG).read_text()) or {}
        data.pop("plugins", None)
        for key in ("terminal", "providers"):
            data.pop(key, None)
        display = dict(data.get("display") or {})
        display.pop("interface", None)
        if display:
            data["display"] = display
        else:
            data.pop("display", None)
        return data

    def write_rules(self, dev: Device) -> None:
        lines = "".join(f"  - {rule}\n" for rule in dev.model.local_rules)
        dev.home.write("roam/rules.yaml", f"local:\n{lines}")

    # -- running commands --------------------------------------------------------------------

    def shared_files(self, dev: Device, files: dict[str, bytes]) -> dict[str, bytes]:
        """The home's files the campaign shares (pool paths and config.yaml), visible or not."""
        return {rel: data for rel, data in files.items()
                if rel in SHARED_POOL or rel in MEMORY or rel == CONFIG}

    def command(self, index: int, *args: str) -> tuple[Result, dict[str, bytes],
                                                        dict[str, bytes]]:
        dev = self.devices[index]
        pre = dev.home.files()
        result = dev.home.roam(*args)
        post = dev.home.files()
        self.log.append(f"{dev.model.name}: roam {' '.join(args)} -> {result.code}"
                        + (f" ({result.err.strip()[:200]})" if result.code else ""))
        self.check_command(dev, args, pre, post)
        return result, pre, post

    def expect(self, ran: tuple[Result, Any, Any], code: int | tuple[int, ...],
               what: str) -> Result:
        result = ran[0]
        codes = (code,) if isinstance(code, int) else code
        assert result.code in codes, (f"{what}: exit {result.code}, expected {codes}: "
                                      f"{result.err.strip()} {result.out.strip()[:500]}")
        return result

    def backups(self, dev: Device) -> set[bytes]:
        folder = dev.home.root / "roam" / "backups"
        if not folder.is_dir():
            return set()
        return {path.read_bytes() for path in folder.rglob("*") if path.is_file()}

    def check_command(self, dev: Device, args: tuple[str, ...], pre: dict[str, bytes],
                      post: dict[str, bytes]) -> None:
        verb = args[0]
        temps = [rel for rel in post if ".roam-tmp-" in rel]
        assert not temps, f"temp files left behind: {temps}"
        writes = verb in ("pull", "restore") and "--apply" in args
        if not writes:
            changed = sorted(set(pre) ^ set(post) | {r for r in pre if pre[r] != post.get(r)})
            assert not changed, f"roam {verb} changed the home: {changed}"
            return
        backups: set[bytes] | None = None
        for rel in sorted(set(pre) | set(post)):
            before, after = pre.get(rel), post.get(rel)
            if before == after:
                continue
            shared = rel == CONFIG or ((rel in SHARED_POOL or rel in MEMORY)
                                       and dev.model.visible(rel))
            assert shared, f"P1: roam {verb} touched {rel}, which is not shared on " \
                           f"{dev.model.name}"
            if before is None:
                continue
            if before in self.fleet.pushed.get(rel, set()):
                continue
            backups = self.backups(dev) if backups is None else backups
            assert before in backups, (
                f"P1: roam {' '.join(args)} on {dev.model.name} replaced {rel} "
                f"(sha {hashlib.sha256(before).hexdigest()[:12]}) which was never pushed and "
                "is in no backup folder")
            merged = rel == CONFIG or rel in MEMORY  # a merge keeps the local part
            if verb == "restore" or "--overwrite-conflicts" in args or not merged:
                self.only_in_backups.append((dev, rel, before))
