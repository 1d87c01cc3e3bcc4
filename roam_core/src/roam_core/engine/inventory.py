"""`roam/installed-plugins.json`: which Hermes plugins this home has, so another can match it.

roam records plugins, it never installs code: after a pull it lists the plugins the remote
home has and this one lacks, with the command that would install each. The inventory is
rewritten before every push from `<root>/plugins/*/` and Hermes's pip entry points.
"""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import re
import shlex
from pathlib import Path
from typing import Any

from roam_core import boundedjson
from roam_core.fs import write_atomic

INVENTORY = "roam/installed-plugins.json"
_CREDENTIALS = re.compile(r"//[^/@]+@")


def _read_yaml_fields(path: Path) -> dict[str, str]:
    from roam_core.config.yamlio import safe_load
    from roam_core.errors import ConfigError

    try:
        data = safe_load(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, ConfigError):
        return {}
    return {k: str(v) for k, v in data.items() if k in ("name", "version")} if isinstance(
        data, dict) else {}


def _git_commit(repo: Path) -> str | None:
    git = repo / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
    except OSError:
        return None
    if not head.startswith("ref: "):
        return head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
    ref = head[5:]
    try:
        return (git / ref).read_text().strip()
    except OSError:
        pass
    try:
        for line in (git / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    except OSError:
        pass
    return None


def _git_origin(repo: Path) -> str | None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(repo / ".git" / "config", encoding="utf-8")
        url = parser.get('remote "origin"', "url")
    except (configparser.Error, OSError):
        return None
    return _CREDENTIALS.sub("//", _git_value(url))


def _git_value(raw: str) -> str:
    """A git config value as git reads it: quoted parts unquoted, escapes undone."""
    out: list[str] = []
    quoted = escaped = False
    for char in raw.strip():
        if escaped:
            out.append({"n": "\n", "t": "\t"}.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char in ";#" and not quoted:
            break  # a comment
        else:
            out.append(char)
    return "".join(out).strip()


def collect(root: Path) -> dict[str, Any]:
    """Every Hermes plugin this home has: user plugins and pip entry-point plugins."""
    plugins: list[dict[str, Any]] = []
    folder = root / "plugins"
    if folder.is_dir():
        for path in sorted(p for p in folder.iterdir() if p.is_dir()):
            manifest = path / "plugin.yaml"
            if not manifest.exists():
                manifest = path / "plugin.yml"
            if not manifest.exists():
                continue
            fields = _read_yaml_fields(manifest)
            plugins.append({"name": fields.get("name", path.name), "kind": "user",
                            "version": fields.get("version"), "commit": _git_commit(path),
                            "source": _git_origin(path)})
    for ep in importlib.metadata.entry_points(group="hermes_agent.plugins"):
        dist = getattr(ep, "dist", None)
        plugins.append({"name": ep.name, "kind": "pip",
                        "version": None if dist is None else dist.version, "commit": None,
                        "source": None if dist is None else dist.metadata["Name"]})
    return {"v": 1, "plugins": sorted(plugins, key=lambda p: (p["name"], p["kind"]))}


def refresh(root: Path) -> None:
    """Rewrite the inventory if what is installed changed."""
    path = root / INVENTORY
    data = json.dumps(collect(root), indent=1, sort_keys=True).encode() + b"\n"
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, mode=0o644)


def missing(root: Path, remote: bytes) -> list[dict[str, Any]]:
    """Plugins in the remote inventory that this home lacks, each with an install hint."""
    try:
        theirs = boundedjson.loads(remote, INVENTORY).get("plugins", [])
    except (ValueError, AttributeError):
        return []
    ours = {(p["name"], p["kind"]) for p in collect(root)["plugins"]}
    found = []
    for plugin in theirs:
        if not isinstance(plugin, dict) or (plugin.get("name"), plugin.get("kind")) in ours:
            continue
        name, source = str(plugin.get("name")), plugin.get("source")
        if plugin.get("kind") == "pip":
            version = plugin.get("version")
            hint = f"pip install {shlex.quote(f'{source}=={version}')}" \
                if source and version else None
        else:
            # quoted: the source string was written by another device
            hint = f"hermes plugins install {shlex.quote(str(source))}" if source else None
        found.append({"name": name, "kind": plugin.get("kind"), "version": plugin.get("version"),
                      "commit": plugin.get("commit"), "install": hint})
    return found
