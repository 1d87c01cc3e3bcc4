"""The shared projection of a config: the part of config.yaml that travels.

Stripped: host-scoped keys (the defaults below plus this device's `host_keys:`), every key
whose name looks secret, every value that looks like a credential or holds a path inside a
user's home folder, and every list holding any of those (lists travel whole). Comments never
travel either: they can hold anything. The text is deterministic for a given meaning and
order, so an unchanged config always projects to the same bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from roam_core.config.sensitive import is_secret_key, is_sensitive_value, secret_in_args
from roam_core.config.yamlio import AliasUse, dump_plain, load_document, load_mapping
from roam_core.errors import ConfigError

#: Keys that describe one machine; each device keeps its own values.
DEFAULT_HOST_KEYS = (
    "terminal",
    "paths",
    "display.interface",
    "browser.executable",
    "mcp_servers.*.command",
    "mcp_servers.*.cwd",
    "mcp_servers.*.env",
    "plugins.entries.roam",
)

KeyPath = tuple[Any, ...]


@dataclass(frozen=True)
class KeyPattern:
    """A dotted key glob: `*` is one key, `**` any number; it covers the keys below it too."""

    pattern: str

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.pattern.split("."))

    def covers(self, path: KeyPath) -> bool:
        """Whether the key at `path` (a tuple of keys) or one of its parents is matched."""
        segments = self.segments
        states = self._closure({0}, segments)
        for key in path:
            following: set[int] = set()
            for state in states:
                if state >= len(segments):
                    continue
                if segments[state] == "**":
                    following.add(state)
                elif fnmatchcase(str(key), segments[state]):
                    following.add(state + 1)
            states = self._closure(following, segments)
            if len(segments) in states:
                return True
            if not states:
                return False
        return False

    @staticmethod
    def _closure(states: set[int], segments: tuple[str, ...]) -> set[int]:
        result = set(states)
        for state in sorted(states):
            while state < len(segments) and segments[state] == "**":
                state += 1
                result.add(state)
        return result


def host_patterns(host_keys: Iterable[str] = ()) -> tuple[KeyPattern, ...]:
    """The default host-scoped keys plus a device's own."""
    return tuple(KeyPattern(key) for key in (*DEFAULT_HOST_KEYS, *host_keys))


def path_name(path: KeyPath) -> str:
    """A key path as users write it: `display.skin`."""
    return ".".join(str(key) for key in path)


def _sensitive_list(items: Sequence[Any]) -> bool:
    if secret_in_args(list(items)):  # `args: [--token, VALUE]`: the value's position tells
        return True
    for item in items:
        if isinstance(item, dict):
            if any(is_secret_key(key) or is_sensitive_value(key) or
                   _sensitive_list([value]) for key, value in item.items()):
                return True
        elif isinstance(item, list):
            if _sensitive_list(item):
                return True
        elif is_sensitive_value(item):
            return True
    return False


def protected_paths(data: dict[Any, Any], patterns: Sequence[KeyPattern]) -> set[KeyPath]:
    """Every key path of `data` that stays on this machine (its whole subtree with it)."""
    found: set[KeyPath] = set()

    def visit(node: dict[Any, Any], path: KeyPath) -> None:
        for key, value in node.items():
            here = (*path, key)
            if (is_secret_key(key) or is_sensitive_value(key)
                    or any(pattern.covers(here) for pattern in patterns)):
                found.add(here)
            elif isinstance(value, dict):
                visit(value, here)
            elif isinstance(value, list):
                if _sensitive_list(value):
                    found.add(here)
            elif is_sensitive_value(value):
                found.add(here)

    visit(data, ())
    return found


def project(data: dict[Any, Any], patterns: Sequence[KeyPattern]) -> dict[Any, Any]:
    """A copy of `data` without its protected paths (and without mappings emptied by that)."""
    protected = protected_paths(data, patterns)

    def strip(node: dict[Any, Any], path: KeyPath) -> dict[Any, Any]:
        kept: dict[Any, Any] = {}
        for key, value in node.items():
            here = (*path, key)
            if here in protected:
                continue
            if isinstance(value, dict) and value:
                inner = strip(value, here)
                if inner:
                    kept[key] = inner
            else:
                kept[key] = value
        return kept

    return strip(data, ())


def _set(tree: dict[Any, Any], path: KeyPath, value: Any) -> None:
    """Put `value` at `path`, creating mappings; give up where the tree holds a non-mapping."""
    node = tree
    for key in path[:-1]:
        if key not in node:
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            return
    node[path[-1]] = copy.deepcopy(value)


def carry_forward(projected: dict[Any, Any], local: dict[Any, Any], base: dict[Any, Any],
                  patterns: Sequence[KeyPattern]) -> dict[Any, Any]:
    """Put back, from the accepted base, the values of keys this device keeps to itself.

    A key that is host-scoped here (or holds a secret or a home path here) says nothing about
    the fleet's value: without this, the projection would lack it and every other device
    would read that as the key being deleted. Carried values are the fleet's, already in the
    store; anything secret-looking among them is still stripped.
    """
    protected = protected_paths(local, patterns)
    result = copy.deepcopy(projected)

    def visit(node: dict[Any, Any], path: KeyPath) -> None:
        for key, value in node.items():
            here = (*path, key)
            if here in protected or any(pattern.covers(here) for pattern in patterns):
                clean = project({key: value}, ())
                if key in clean:
                    _set(result, here, clean[key])
            elif isinstance(value, dict):
                visit(value, here)

    visit(base, ())
    return result


def shared_projection(text: str, *, host_keys: Sequence[str] = (),
                      source: str = "config.yaml", base: str | None = None) -> str:
    """The YAML text of a config that travels; `ConfigError(source:line)` when malformed.

    `base` is the projection this device last accepted (or pushed) for this file: keys this
    device keeps to itself carry the base's value forward instead of vanishing.
    """
    for key in host_keys:
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"host key {key!r} must be a dotted key path")
    patterns = host_patterns(host_keys)
    local, uses = load_document(text, source)
    if local is None:
        local = {}
    if not isinstance(local, dict):
        raise ConfigError(f"{source}:1: expected a mapping of settings at the top level")
    projected = project(local, patterns)
    _refuse_travelling_aliases(uses, protected_paths(local, patterns), patterns, source)
    if base is not None:
        projected = carry_forward(projected, local, load_mapping(
            base, "accepted config projection", aliases=False), patterns)
    return dump_plain(projected)


def _refuse_travelling_aliases(uses: Sequence[AliasUse], protected: set[KeyPath],
                               patterns: Sequence[KeyPattern], source: str) -> None:
    """Aliases stay in this device's file: sending them would expand them into every other's.

    An alias (or the anchor it names) inside a key that stays here anyway is fine.
    """
    kept = {tuple(str(key) for key in path) for path in protected}
    for use in uses:
        path = use.path[:use.path.index("<<")] if "<<" in use.path else use.path
        if any(path[:n] in kept for n in range(1, len(path) + 1)) or (
                path and any(pattern.covers(path) for pattern in patterns)):
            continue
        name = path_name(path) or "the top level"
        raise ConfigError(f"{source}:{use.line}: {name} uses a YAML alias or anchor, which roam "
                          "does not copy to other devices; write the value out or keep the "
                          "key on this device (host_keys)")
