"""Skills that belong to Hermes or to the hub, not to the user: found so they stay local.

Bundled skills: `skills/.bundled_manifest` holds one `name:md5` line per skill Hermes copied
in. A skill tree whose hash still equals the recorded one is Hermes's pristine copy and stays
local (each device gets it from its own Hermes); an edited one is the user's and syncs. The
hash replicates Hermes's `_dir_hash` (tools/skills_sync.py) without importing Hermes: MD5 over
every file of the tree in `sorted(rglob("*"))` order, feeding the relative POSIX path and then
the file's bytes, with no separator.

Seeded category descriptions: Hermes copies each `<category>/DESCRIPTION.md` of its bundled
skills into `skills/` (when missing). One whose bytes still equal the file this device's Hermes
ships (found the way Hermes finds its bundled skills: `HERMES_BUNDLED_SKILLS`, else the
installed hermes-agent's data files) stays local like the skills it describes; an edited one,
or one for a category Hermes does not ship, is the user's and syncs.

Hub skills: `skills/.hub/lock.json` records each installed skill's `install_path` (relative to
`skills/`); those trees stay local and the other device installs them from the hub.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from roam_core.scope.patterns import escape

log = logging.getLogger(__name__)

MANIFEST = ".bundled_manifest"
DESCRIPTION = "DESCRIPTION.md"
BUNDLED_ENV = "HERMES_BUNDLED_SKILLS"
HUB_LOCK = (".hub", "lock.json")
#: How deep below `skills/` a SKILL.md may sit (Hermes uses `<category>/<skill>/SKILL.md`).
MAX_SKILL_DEPTH = 4
FRONT_MATTER_CHARS = 4000


@dataclass(frozen=True)
class PinnedSkill:
    """A skill tree kept local: `rel` is relative to the home, ending in `/`."""

    rel: str
    name: str
    kind: str  # "bundled", "hub" or "seeded"

    @property
    def pattern(self) -> str:
        return escape(self.rel)

    @property
    def reason(self) -> str:
        if self.kind == "bundled":
            return f"bundled skill {self.name!r} is unmodified (each device's Hermes provides it)"
        if self.kind == "seeded":
            return (f"category description {self.name!r} is as Hermes seeded it (each device's "
                    "Hermes provides it)")
        return f"hub skill {self.name!r} (each device installs it from the hub)"


def dir_hash(directory: Path) -> str:
    """Hermes's `_dir_hash`: MD5 over sorted relative POSIX paths and file bytes."""
    digest = hashlib.md5(usedforsecurity=False)
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue  # roam never follows a link; such a tree simply stops matching
        digest.update(path.relative_to(directory).as_posix().encode("utf-8"))
        digest.update(path.read_bytes())
    return digest.hexdigest()


def read_manifest(path: Path) -> dict[str, str]:
    """`name -> md5` from a `.bundled_manifest` (v1 files hold bare names: empty hash)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    manifest: dict[str, str] = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(":")
        if name.strip():
            manifest[name.strip()] = value.strip()
    return manifest


def skill_name(skill_md: Path) -> str:
    """The front-matter `name:` of a SKILL.md, else its folder's name, read as Hermes reads it.

    Hermes (tools/skills_sync.py `_read_skill_name`) scans the first 4000 characters line by
    line: the first `name:` between the `---` markers, stripped of spaces and quotes.
    """
    try:
        with skill_md.open(encoding="utf-8", errors="replace") as handle:
            content = handle.read(FRONT_MATTER_CHARS)
    except OSError:
        return skill_md.parent.name
    inside = False
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped == "---":
            if inside:
                break
            inside = True
            continue
        if inside and stripped.startswith("name:"):
            value = stripped.split(":", 1)[1].strip().strip("\"'")
            if value:
                return value
    return skill_md.parent.name


def _skill_dirs(skills: Path) -> list[Path]:
    """Every folder under `skills/` holding a SKILL.md, skipping dot-folders and links."""
    found: list[Path] = []
    pending = [(skills, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.name == "SKILL.md" and entry.is_file(follow_symlinks=False) and depth > 0:
                found.append(folder)
            elif entry.is_dir(follow_symlinks=False) and depth < MAX_SKILL_DEPTH:
                pending.append((Path(entry.path), depth + 1))
    return sorted(found)


def bundled_skills(home: Path, prefix: str = "") -> list[PinnedSkill]:
    """The pristine bundled skill trees of one home (`prefix` is `profiles/NAME/` or '')."""
    skills = home / "skills"
    manifest = read_manifest(skills / MANIFEST)
    if not manifest:
        return []
    pinned: list[PinnedSkill] = []
    for folder in _skill_dirs(skills):
        name = skill_name(folder / "SKILL.md")
        if name not in manifest:
            continue
        recorded = manifest[name]
        # a v1 manifest records no hash; Hermes then takes the copy on disk as its baseline
        if recorded and recorded != dir_hash(folder):
            continue
        rel = folder.relative_to(home).as_posix()
        pinned.append(PinnedSkill(f"{prefix}{rel}/", name, "bundled"))
    return pinned


@functools.lru_cache(maxsize=4)
def shipped_descriptions(override: str) -> dict[str, str]:
    """`<category path> -> sha256` of the DESCRIPTION.md files this device's Hermes ships."""
    found: dict[str, str] = {}
    if override:
        root = Path(override)
        paths = [(p.relative_to(root).parent.as_posix(), p) for p in root.rglob(DESCRIPTION)]
    else:
        paths = _packaged_descriptions()
    for category, path in paths:
        try:
            found[category] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
    return found


def _packaged_descriptions() -> list[tuple[str, Path]]:
    """The installed hermes-agent's `skills/**/DESCRIPTION.md` data files (metadata only)."""
    import importlib.metadata

    try:
        files = importlib.metadata.distribution("hermes-agent").files or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found: list[tuple[str, Path]] = []
    for item in files:
        parts = PurePosixPath(str(item)).parts
        if parts[-1:] != (DESCRIPTION,) or "skills" not in parts[:-1]:
            continue
        inner = parts[len(parts) - 1 - parts[::-1].index("skills"):-1]
        found.append(("/".join(inner), Path(str(item.locate()))))
    return found


def seeded_descriptions(home: Path, prefix: str = "") -> list[PinnedSkill]:
    """The category DESCRIPTION.md files of one home that are exactly as Hermes ships them."""
    shipped = shipped_descriptions(os.environ.get(BUNDLED_ENV, "").strip())
    pinned: list[PinnedSkill] = []
    for category, digest in sorted(shipped.items()):
        path = home / "skills" / category / DESCRIPTION
        try:
            if path.is_symlink() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                continue
        except OSError:
            continue
        pinned.append(PinnedSkill(f"{prefix}skills/{category}/{DESCRIPTION}", category,
                                  "seeded"))
    return pinned


def hub_skills(home: Path, prefix: str = "") -> list[PinnedSkill]:
    """The hub-installed skill trees recorded in `skills/.hub/lock.json`."""
    lock = home / "skills" / HUB_LOCK[0] / HUB_LOCK[1]
    try:
        data = json.loads(lock.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError) as error:
        log.warning("ignoring unreadable %s: %s", lock, error)
        return []
    installed = data.get("installed") if isinstance(data, dict) else None
    if not isinstance(installed, dict):
        return []
    pinned: list[PinnedSkill] = []
    for name, record in sorted(installed.items()):
        install_path = record.get("install_path") if isinstance(record, dict) else None
        if not isinstance(install_path, str) or not _safe_relative(install_path):
            continue
        rel = PurePosixPath("skills", install_path).as_posix()
        pinned.append(PinnedSkill(f"{prefix}{rel}/", str(name), "hub"))
    return pinned


def _safe_relative(path: str) -> bool:
    parts = path.replace("\\", "/").strip("/").split("/")
    return bool(path.strip("/")) and not path.startswith(("/", "\\")) and ":" not in parts[0] \
        and all(part not in ("", ".", "..") for part in parts)


def pinned_skills(root: Path) -> list[PinnedSkill]:
    """Every bundled and hub skill tree of the root home and of each profile."""
    homes: list[tuple[Path, str]] = [(root, "")]
    try:
        with os.scandir(root / "profiles") as listing:
            for entry in sorted(listing, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    homes.append((Path(entry.path), f"profiles/{entry.name}/"))
    except OSError:
        pass
    pinned: list[PinnedSkill] = []
    for home, prefix in homes:
        if not (home / "skills").is_dir() or (home / "skills").is_symlink():
            continue
        pinned.extend(bundled_skills(home, prefix))
        pinned.extend(seeded_descriptions(home, prefix))
        pinned.extend(hub_skills(home, prefix))
    return pinned
