"""The shape campaign: two homes take every shape a real home has, checked step by step.

Beside the randomized campaign (same properties, other steps): files turn into folders and
back, files and folders into symlinks and back, folders become unreadable (the device then
runs roam as a real process without CAP_DAC_OVERRIDE), FIFOs and non-UTF-8 names appear, a
folder nests deeper than the format holds, modes change, folders are renamed.

Properties, checked after every command:
- no traceback; exit 0, 2, or 1 with one line, and 1 only where the model expects it
  (a push of a too-deep folder);
- a push publishes every file the device can see (content and executable bit), and carries
  forward, unchanged, everything the store held at a path the device cannot see;
- a pull installs every remote file it does not list as a conflict;
and after each quiet round (shapes healed, both devices pull with --overwrite-conflicts and
push): both homes hold exactly the store's files and say they are in sync.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from random import Random

from campaign.harness import Home, Result, Runner, Store
from campaign.storeview import generations, manifest_of, open_repository

NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
          "--inh-caps", "-dac_override,-dac_read_search"]
SKILLS = ("s0", "s1", "s2")
DEEP = 70


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Device:
    """One home and the shapes this campaign gave it."""

    def __init__(self, home: Home, outside: Path) -> None:
        self.home = home
        self.root = home.root
        self.outside = outside  # where symlinks point: never inside the home
        outside.mkdir(parents=True, exist_ok=True)
        self.locked: set[str] = set()
        self.deep: str | None = None

    def roam(self, *args: str) -> Result:
        if not self.locked:
            return self.home.roam(*args)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
        env.update(self.home.store.env())
        done = subprocess.run([*NO_DAC, sys.executable, "-m", "roam_core.cli.main", "--home",
                               str(self.root), *args], env=env, capture_output=True,
                              text=True, timeout=300)
        return Result(done.returncode, done.stdout, done.stderr)

    # -- what this device can see --------------------------------------------------------

    def hidden(self) -> set[str]:
        """Shared paths this device cannot see: symlinks and unreadable folders."""
        found = set(self.locked)
        for folder, dirs, files in os.walk(self.root):
            rel = os.path.relpath(folder, self.root)
            if rel == "roam" or rel.startswith("roam/") or rel in self.locked:
                dirs[:] = []  # roam's own, or what roam cannot list either
                continue
            for name in dirs + files:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    found.add(os.path.normpath(os.path.join(rel, name)))
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        return found

    def visible(self) -> dict[str, tuple[str, bool]]:
        """rel → (sha256, executable) of every shared regular file roam can see here."""
        found: dict[str, tuple[str, bool]] = {}
        for folder, dirs, files in os.walk(self.root):
            rel = os.path.relpath(folder, self.root)
            rel = "" if rel == "." else rel + "/"
            dirs[:] = [d for d in dirs if (rel or d in ("skills",)) and rel + d not in
                       self.locked and not os.path.islink(os.path.join(folder, d))
                       and d != "roam"]
            for name in files:
                path, target = os.path.join(folder, name), rel + name
                if not (target == "SOUL.md" or target.startswith("skills/")):
                    continue
                try:
                    target.encode("utf-8")
                except UnicodeEncodeError:
                    continue
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode):
                    found[target] = (_sha(Path(path).read_bytes()), bool(st.st_mode & 0o100))
        return found

    # -- shapes ----------------------------------------------------------------------------

    def heal(self) -> None:
        """Undo every odd shape: unlock, drop links, FIFOs, odd names and the deep folder."""
        for rel in self.locked:
            os.chmod(self.root / rel, 0o755)
        self.locked.clear()
        for rel in sorted(self.hidden(), key=len, reverse=True):
            (self.root / rel).unlink()
        for folder, _dirs, files in os.walk(os.fsencode(self.root)):
            for name in files:
                path = os.path.join(folder, name)
                odd = not stat.S_ISREG(os.lstat(path).st_mode)
                try:
                    name.decode("utf-8")
                except UnicodeDecodeError:
                    odd = True
                if odd:
                    os.unlink(path)
        if self.deep is not None:
            shutil.rmtree(self.root / self.deep, ignore_errors=True)
            self.deep = None


class ShapeCampaign:
    """Two devices on one store, a random shape or command at each step."""

    def __init__(self, store: Store, root: Path, rng: Random, runner: Runner) -> None:
        self.store = store
        self.rng = rng
        self.devices = [Device(Home(root / name, name, store, runner), root / f"{name}-out")
                        for name in ("a", "b")]
        self.log: list[str] = []
        self.serial = 0
        self.steps: list[Callable[[Device], str]] = [
            self.write, self.write, self.to_folder, self.to_file, self.link, self.unlink,
            self.lock, self.unlock, self.odd, self.deep, self.mode, self.rename,
            self.push, self.push, self.pull, self.pull, self.pull_overwrite, self.status]
        self.scratch = root / "view"

    # -- the store -------------------------------------------------------------------------

    def manifest(self) -> dict[str, tuple[str, bool]]:
        with open_repository(self.store, self.scratch) as repo:
            found = generations(repo)
            if not found:
                return {}
            _id, snapshot = found[max(found)]
            return {rel: (entry.sha256, bool(entry.mode & 0o100))
                    for rel, entry in manifest_of(repo, snapshot).items()
                    if rel == "SOUL.md" or rel.startswith("skills/")}

    # -- starting and playing --------------------------------------------------------------

    def start(self) -> None:
        a, b = self.devices
        for dev in self.devices:
            for skill in SKILLS[:2]:
                self._put(dev, f"skills/{skill}/SKILL.md")
        self._put(a, "SOUL.md")
        assert a.roam("init", "--create-remote").code == 0
        assert a.roam("push").code == 0
        assert b.roam("init").code == 0
        self.quiet()

    def play(self, steps: int, quiet_every: int = 30) -> None:
        self.start()
        for number in range(1, steps + 1):
            dev = self.rng.choice(self.devices)
            step = self.rng.choice(self.steps)
            self.log.append(f"step {number}: {step.__name__} on {dev.home.name}: "
                            f"{step(dev)}")
            if number % quiet_every == 0:
                self.quiet()
        self.quiet()

    def quiet(self) -> None:
        """Heal every shape, let both devices settle, and check they hold the same."""
        self.log.append("quiet round")
        for dev in self.devices:
            dev.heal()
        a, b = self.devices
        for dev in (a, b, a):
            self._checked(dev, "pull", "--apply", "--overwrite-conflicts", "--json")
            pushed = self._checked(dev, "push", "--json")
            assert pushed.code == 0, pushed.out + pushed.err
        self._checked(b, "pull", "--apply", "--json")
        store = self.manifest()
        for dev in self.devices:
            assert dev.visible() == store, (
                f"{dev.home.name} does not hold the store's files after a quiet round: "
                f"{_differ(dev.visible(), store)}")
            report = json.loads(self._checked(dev, "status", "--json").out)
            assert report["dirty"] == 0 and not report["behind"], (dev.home.name, report)

    # -- commands and their checks ---------------------------------------------------------

    def _checked(self, dev: Device, *args: str) -> Result:
        result = dev.roam(*args)
        assert "Traceback" not in result.err, result.err
        assert result.code in (0, 1, 2), (args, result.code, result.err)
        if result.code == 1:
            lines = result.err.strip().splitlines()
            assert len(lines) == 1, (args, result.err)
            expected = args[0] == "push" and dev.deep is not None and "nests deeper" in lines[0]
            assert expected, f"{' '.join(args)} failed on {dev.home.name}: {lines[0]}"
        return result

    def push(self, dev: Device) -> str:
        before = self.manifest()
        result = self._checked(dev, "push", "--json")
        if result.code != 0:
            return f"exit {result.code}"
        after = self.manifest()
        hidden = dev.hidden()
        for rel, entry in before.items():
            if any(rel == top or rel.startswith(top + "/") for top in hidden):
                assert after.get(rel) == entry, f"push removed or changed unseen {rel}"
        for rel, entry in dev.visible().items():
            assert after.get(rel) == entry, f"push did not publish {rel} as it is here"
        skipped = {item["path"] for item in json.loads(result.out)["skipped"]}
        assert hidden <= skipped, f"skipped without a word: {sorted(hidden - skipped)}"
        return "pushed"

    def _pull(self, dev: Device, *flags: str) -> str:
        result = self._checked(dev, "pull", "--apply", "--json", *flags)
        plan = json.loads(result.out)
        kept = set(plan["conflicts_kept_local"])
        # what this device changed itself stays, and so does the path it changed type of
        mine = {*kept, *plan["local_changes"]}
        store, here, hidden = self.manifest(), dev.visible(), dev.hidden()
        for rel, entry in store.items():
            if any(rel == top or rel.startswith(top + "/") or top.startswith(rel + "/")
                   for top in hidden | mine):
                continue
            assert here.get(rel, (None, False))[0] == entry[0], f"pull did not install {rel}"
        return f"exit {result.code}, {len(kept)} kept"

    def pull(self, dev: Device) -> str:
        return self._pull(dev)

    def pull_overwrite(self, dev: Device) -> str:
        return self._pull(dev, "--overwrite-conflicts")

    def status(self, dev: Device) -> str:
        result = self._checked(dev, "status", "--json")
        hidden = dev.hidden()
        report = json.loads(result.out)
        listed = {item["path"] for item in report["skipped"]}
        assert hidden <= listed, f"status did not list {sorted(hidden - listed)}"
        removed = set(report["changes"]["removed"])
        assert not any(rel == top or rel.startswith(top + "/") for rel in removed
                       for top in hidden), f"status counts unseen paths as removed: {removed}"
        return f"{report['dirty']} dirty"

    # -- shapes ----------------------------------------------------------------------------

    def _universe(self) -> list[str]:
        return ["SOUL.md", *(f"skills/{s}/{name}" for s in SKILLS
                             for name in ("SKILL.md", "notes.md", "d/x.md", "d/e/y.md"))]

    def _clear_way(self, dev: Device, rel: str) -> None:
        """Make every folder on the way to `rel` a real, readable folder, and `rel` free."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            here = dev.root / "/".join(parts[:depth])
            if here.is_symlink() or here.is_file():
                here.unlink()
            if "/".join(parts[:depth]) in dev.locked:
                os.chmod(here, 0o755)
                dev.locked.discard("/".join(parts[:depth]))
        target = dev.root / rel
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            for rel_locked in [x for x in dev.locked if x.startswith(rel + "/")]:
                os.chmod(dev.root / rel_locked, 0o755)
                dev.locked.discard(rel_locked)
            shutil.rmtree(target)

    def _put(self, dev: Device, rel: str) -> None:
        self._clear_way(dev, rel)
        self.serial += 1
        path = dev.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{rel} from {dev.home.name}, #{self.serial}\n")

    def _files(self, dev: Device) -> list[str]:
        return sorted(dev.visible())

    def _folders(self, dev: Device) -> list[str]:
        return sorted({"/".join(rel.split("/")[:depth]) for rel in dev.visible()
                       for depth in range(2, rel.count("/") + 1)})

    def write(self, dev: Device) -> str:
        rel = self.rng.choice(self._universe())
        self._put(dev, rel)
        return rel

    def to_folder(self, dev: Device) -> str:
        files = [rel for rel in self._files(dev) if rel != "SOUL.md"]
        if not files:
            return "no file"
        rel = self.rng.choice(files)
        (dev.root / rel).unlink()
        self._put(dev, f"{rel}/inner.md")
        return rel

    def to_file(self, dev: Device) -> str:
        folders = self._folders(dev)
        if not folders:
            return "no folder"
        rel = self.rng.choice(folders)
        self._put(dev, rel)
        return rel

    def link(self, dev: Device) -> str:
        choices = [rel for rel in self._files(dev) + self._folders(dev)
                   if not any(rel.startswith(top + "/") for top in dev.locked)]
        if not choices:
            return "nothing"
        rel = self.rng.choice(choices)
        target = dev.outside / f"t{self.serial}"
        self.serial += 1
        if (dev.root / rel).is_dir():  # a checkout elsewhere: what roam must not follow
            target.mkdir()
            (target / "SKILL.md").write_text(f"outside {target.name}\n")
        else:
            target.write_text(f"outside {target.name}\n")
        self._clear_way(dev, rel)
        (dev.root / rel).symlink_to(target)
        return rel

    def unlink(self, dev: Device) -> str:
        links = sorted(dev.hidden() - dev.locked)
        if not links:
            return "no link"
        rel = self.rng.choice(links)
        (dev.root / rel).unlink()
        if self.rng.random() < 0.5:
            self._put(dev, rel)
        return rel

    def lock(self, dev: Device) -> str:
        folders = [rel for rel in self._folders(dev) if rel.count("/") == 1]
        if not folders:
            return "no folder"
        rel = self.rng.choice(folders)
        os.chmod(dev.root / rel, 0)
        dev.locked.add(rel)
        return rel

    def unlock(self, dev: Device) -> str:
        if not dev.locked:
            return "none locked"
        rel = self.rng.choice(sorted(dev.locked))
        os.chmod(dev.root / rel, 0o755)
        dev.locked.discard(rel)
        return rel

    def odd(self, dev: Device) -> str:
        folders = self._folders(dev)
        if not folders:
            return "no folder"
        folder = dev.root / self.rng.choice(folders)
        if self.rng.random() < 0.5:
            path = folder / f"pipe{self.serial}.md"
            os.mkfifo(path)
        else:
            path = Path(os.fsdecode(os.path.join(os.fsencode(folder),
                                                 b"caf\xe9%d.md" % self.serial)))
            path.write_bytes(b"latin-1 name\n")
        self.serial += 1
        return str(path.relative_to(dev.root))

    def deep(self, dev: Device) -> str:
        if dev.deep is not None:
            shutil.rmtree(dev.root / dev.deep, ignore_errors=True)
            dev.deep = None
            return "removed"
        skill = self.rng.choice(SKILLS)
        dev.deep = f"skills/{skill}/deep"
        rel = f"{dev.deep}/{'/'.join(['d'] * DEEP)}/x.md"
        # a pull may have put a file where the deep folder passes: clear the whole way
        self._clear_way(dev, rel)
        path = dev.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("deep\n")
        return dev.deep

    def mode(self, dev: Device) -> str:
        files = self._files(dev)
        if not files:
            return "no file"
        rel = self.rng.choice(files)
        mode = self.rng.choice((0o755, 0o644, 0o600, 0o700))
        os.chmod(dev.root / rel, mode)
        return f"{rel} {mode:o}"

    def rename(self, dev: Device) -> str:
        present = [s for s in SKILLS if (dev.root / "skills" / s).is_dir()
                   and not (dev.root / "skills" / s).is_symlink()
                   and f"skills/{s}" not in dev.locked]
        absent = [s for s in SKILLS if not os.path.lexists(dev.root / "skills" / s)]
        if not present or not absent:
            return "nothing to rename"
        old, new = self.rng.choice(present), self.rng.choice(absent)
        if dev.deep and dev.deep.startswith(f"skills/{old}/"):
            dev.deep = f"skills/{new}/" + dev.deep.split("/", 2)[2]
        (dev.root / "skills" / old).rename(dev.root / "skills" / new)
        return f"{old} -> {new}"


def _differ(here: dict[str, tuple[str, bool]], store: dict[str, tuple[str, bool]]) -> str:
    keys = sorted(set(here) | set(store))
    return ", ".join(f"{rel}: here {here.get(rel)} store {store.get(rel)}" for rel in keys
                     if here.get(rel) != store.get(rel))
