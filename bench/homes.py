"""Reproducible synthetic Hermes homes: `small`, `large` (+ 2 GB of ignored weight), `huge`.

Every shared byte is real (written, never sparse) and derived from a seeded generator, so two
runs of the harness measure the same data. The ignored weight (`venv/`, `node_modules/`,
caches, `state.db`) is made cheaply: many small files plus sparse files, because roam must
never read it and restic is only ever handed the shared set.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

#: Bump when the generated content changes, so cached homes are rebuilt.
GENERATOR_VERSION = 3
MARKER = ".bench-home.json"

CATEGORIES = ("research", "devops", "writing", "data", "media", "productivity", "github",
              "mlops", "security", "email", "notes", "smart-home", "social", "finance",
              "travel", "health", "gaming", "creative", "software-development", "misc")
TEXT_KINDS = (".md", ".py", ".yaml", ".json", ".txt", ".sh")
BINARY_KINDS = (".png", ".bin", ".tar.gz", ".woff2")
_WORDS_TEXT = ("agent memory skill tool model prompt context token session reply user note plan "
         "task build deploy query index vector cache config profile persona channel thread "
         "the a of to and in is for on with that this it as be by from are was at or an "
         "python shell yaml json markdown file folder home device sync push pull store")
WORDS = _WORDS_TEXT.split()


@dataclass(frozen=True)
class HomeSpec:
    """What one synthetic home holds."""

    name: str
    files: int  # shared files
    shared_bytes: int  # approximate total of ordinary shared files
    big_files: int = 0  # extra files of `big_size` bytes each
    big_size: int = 50 * 1024 * 1024
    weight: bool = False  # 2 GB of ignored weight beside the shared files
    seed: int = 12


SPECS = {
    "small": HomeSpec("small", files=300, shared_bytes=2 * 1024 * 1024),
    "large": HomeSpec("large", files=19_996, shared_bytes=300 * 1024 * 1024, big_files=4,
                      weight=True),
    "huge": HomeSpec("huge", files=20, shared_bytes=64 * 1024, big_files=1,
                     big_size=1024 * 1024 * 1024),
}


class TextSource:
    """Cheap reproducible prose: slices of one seeded corpus, each file given its own header."""

    def __init__(self, rng: random.Random, size: int = 4 * 1024 * 1024) -> None:
        lines: list[str] = []
        total = 0
        while total < size:
            line = " ".join(rng.choices(WORDS, k=rng.randint(4, 16)))
            lines.append(line)
            total += len(line) + 1
        self.corpus = ("\n".join(lines) + "\n").encode()

    def take(self, rng: random.Random, size: int, header: str) -> bytes:
        start = rng.randrange(0, len(self.corpus) - size) if size < len(self.corpus) else 0
        body = self.corpus[start:start + max(size - len(header) - 1, 0)]
        return header.encode() + b"\n" + body


def _file_size(rng: random.Random, mean: int) -> int:
    # Long-tailed like real homes: most files small, a few tens of KiB up to ~1 MiB.
    return max(64, min(int(rng.expovariate(1 / mean)), 1024 * 1024))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _config(settings: dict[str, str]) -> str:
    lines = ["model:", "  default: stub/model", "  provider: custom", "display:",
             "  skin: default", "memory:", "  memory_enabled: true", "plugins:", "  entries:",
             "    roam:", "      settings:"]
    lines += [f"        {key}: {json.dumps(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def shared_paths(home: Path) -> list[str]:
    """The relative paths the generator made as shared files (what restic is handed)."""
    return json.loads((home / MARKER).read_text())["shared"]


def generate(spec: HomeSpec, home: Path, settings: dict[str, str]) -> Path:
    """Build `home` for `spec` unless an identical one is already there; returns `home`."""
    marker = home / MARKER
    want = {"version": GENERATOR_VERSION, "spec": spec.__dict__}
    try:
        if {k: v for k, v in json.loads(marker.read_text()).items() if k != "shared"} == want:
            _write(home / "config.yaml", _config(settings).encode())
            return home
    except (OSError, ValueError):
        pass
    if home.exists():
        shutil.rmtree(home)
    rng = random.Random(spec.seed)
    text = TextSource(rng)
    shared: list[str] = []

    def put(rel: str, data: bytes) -> None:
        _write(home / rel, data)
        shared.append(rel)

    put("SOUL.md", text.take(rng, 3000, "# Soul\nYou are a careful assistant."))
    put("memories/MEMORY.md", text.take(rng, 6000, "# Memory\n§ first entry"))
    put("memories/USER.md", text.take(rng, 2000, "# User\n§ prefers short answers"))
    for skin in range(3):
        put(f"skins/skin{skin}.yaml", text.take(rng, 800, f"name: skin{skin}"))
    remaining = spec.files - len(shared) - spec.big_files
    mean = max(spec.shared_bytes // max(remaining, 1), 64)
    per_skill = 20 if spec.files > 1000 else 6
    index = 0
    while index < remaining:
        category = CATEGORIES[(index // per_skill) % len(CATEGORIES)]
        skill = f"skill-{index // per_skill:04d}"
        slot = index % per_skill
        folder = f"skills/{category}/{skill}"
        if slot == 0:
            put(f"{folder}/SKILL.md", text.take(rng, _file_size(rng, mean),
                                                f"---\nname: {skill}\n---"))
        elif rng.random() < 0.6:
            kind = rng.choice(TEXT_KINDS)
            put(f"{folder}/references/ref{slot}{kind}",
                text.take(rng, _file_size(rng, mean), f"# {skill} reference {slot}"))
        else:
            kind = rng.choice(BINARY_KINDS)
            put(f"{folder}/assets/asset{slot}{kind}", rng.randbytes(_file_size(rng, mean)))
        index += 1
    for big in range(spec.big_files):
        rel = f"skills/media/big-assets/model{big}.bin"
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            left = spec.big_size
            while left:
                step = min(left, 8 * 1024 * 1024)
                handle.write(rng.randbytes(step))
                left -= step
        shared.append(rel)
    _write(home / "config.yaml", _config(settings).encode())
    shared.append("config.yaml")
    if spec.weight:
        make_weight(home, rng)
    marker.write_text(json.dumps({**want, "shared": sorted(shared)}))
    return home


def make_weight(home: Path, rng: random.Random) -> int:
    """About 2 GB of ignored weight; returns its apparent size in bytes."""
    total = 0
    for tree, count in (("venv/lib/python3.11/site-packages", 3000), ("node_modules", 3000),
                        ("cache/http", 500), ("skills/devops/skill-0000/node_modules", 200)):
        for number in range(count):
            data = rng.randbytes(rng.randint(200, 4000))
            _write(home / tree / f"pkg{number // 50}" / f"mod{number}.py", data)
            total += len(data)
    for rel, size in (("state.db", 900 * 1024 * 1024), ("venv/lib/libbig.so", 400 << 20),
                      ("node_modules/.cache/blob.pack", 400 << 20),
                      ("cache/models/weights.bin", 300 << 20)):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            handle.write(b"SQLite format 3\0" if rel == "state.db" else b"\x7fELF")
            handle.truncate(size)  # sparse: weight that costs no disk, never to be read
        total += size
    for rel in ("state.db-wal", "sessions/20260101_session.json", "logs/agent.log"):
        data = rng.randbytes(64 * 1024)
        _write(home / rel, data)
        total += len(data)
    return total


def weight_roots(home: Path) -> list[str]:
    """Top-level ignored folders and files the harness checks are never opened."""
    return [name for name in ("venv", "node_modules", "cache", "state.db", "sessions", "logs")
            if (home / name).exists()]


def tree_bytes(path: Path) -> int:
    """Bytes of every regular file below `path` (a store's size)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def local_home(work: Path, name: str) -> tuple[Path, dict[str, str], list[str]]:
    """The benchmark home `name` under `work`, set for an empty local store, not initialised.

    Returns the home, an environment with a fresh archive key and no `ROAM_`/`HERMES_`
    variable of the caller's, and the argv that runs this checkout's roam on the home.
    """
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    home = work / f"home-{name}"
    generate(SPECS[name], home, {"backend": "local", "local_dir": str(store)})
    shutil.rmtree(home / "roam", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = os.urandom(32).hex()
    return home, env, [sys.executable, "-m", "roam_core.cli.main", "--home", str(home)]
