"""The engine's door to the scope model (roam_core.scope), config projection and merges."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roam_core.types import Scope


def load(root: Path, settings: Mapping[str, Any]) -> Any:
    """The scope model of the root home, with every provider's rules and rules.yaml."""
    from roam_core.manager import get_manager

    try:
        from roam_core.scope import load_scope  # type: ignore[attr-defined]
    except ImportError:
        return _Interim(root)
    return load_scope(root, get_manager(), settings)


@dataclass(frozen=True)
class _Entry:
    rel: str
    path: Path
    stat: os.stat_result


class _Interim:
    """Until the scope model lands: the built-in allowlist, first match wins. TEMPORARY."""

    host_keys: tuple[str, ...] = ()

    def __init__(self, root: Path) -> None:
        from roam_core.types import ScopeRule

        self.root = root
        self.rules = tuple(ScopeRule(p, Scope.SHARED) for p in (
            "SOUL.md", "memories/", "skills/", "skins/"))
        self.skipped: list[tuple[str, str]] = []

    def classify(self, rel: str) -> Scope:
        for rule in self.rules:
            pattern = rule.pattern
            if (pattern.endswith("/") and (rel + "/").startswith(pattern)) or fnmatch.fnmatchcase(
                    rel, pattern):
                return rule.scope
        return Scope.IGNORED

    def is_config(self, rel: str) -> bool:
        return False

    def walk(self) -> Iterator[_Entry]:
        found: list[_Entry] = []
        for directory, dirs, files in os.walk(self.root):
            rel_dir = os.path.relpath(directory, self.root)
            rel_dir = "" if rel_dir == "." else rel_dir + "/"
            dirs[:] = [d for d in dirs if self._maybe(rel_dir + d)]
            for name in files:
                rel = rel_dir + name
                path = Path(directory) / name
                st = os.lstat(path)
                if self.classify(rel) is Scope.SHARED and not os.path.islink(path):
                    found.append(_Entry(rel, path, st))
        return iter(sorted(found, key=lambda e: e.rel))

    def _maybe(self, rel: str) -> bool:
        return any((rule.pattern.startswith(rel + "/") or (rel + "/").startswith(rule.pattern))
                   and rule.scope is Scope.SHARED for rule in self.rules)
