"""This device's `roam/rules.yaml`: its own shared / local / ignored globs and host keys.

Every mistake is a `ConfigError` naming the file and line: malformed YAML, an unknown key, a
value that is not a list, a pattern that is not a relative glob, and a `shared:` rule that
tries to share `roam/` or a credential file (refused with the reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roam_core.errors import ConfigError
from roam_core.scope.never import refusal
from roam_core.scope.patterns import Glob, PatternError
from roam_core.types import Scope

RULES_FILE = ("roam", "rules.yaml")
SCOPE_KEYS = {"shared": Scope.SHARED, "local": Scope.LOCAL, "ignored": Scope.IGNORED}
KNOWN_KEYS = (*SCOPE_KEYS, "host_keys")


@dataclass(frozen=True)
class UserRule:
    """One rule from rules.yaml, with the line it was written on (1-based)."""

    pattern: str
    scope: Scope
    line: int


@dataclass
class RulesFile:
    """The parsed rules.yaml (empty when the file does not exist)."""

    path: Path
    rules: list[UserRule] = field(default_factory=list)
    host_keys: list[str] = field(default_factory=list)
    exists: bool = False


def rules_path(root: Path) -> Path:
    """Where the root home's rules.yaml lives."""
    return root.joinpath(*RULES_FILE)


def load_rules_file(root: Path) -> RulesFile:
    """Read and validate `<root>/roam/rules.yaml`."""
    path = rules_path(root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return RulesFile(path)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None
    parsed = parse_rules(text, str(path))
    parsed.path = path
    parsed.exists = True
    return parsed


def parse_rules(text: str, source: str) -> RulesFile:
    """Validate rules.yaml text; rules keep the order they are written in (first match wins)."""
    import yaml

    from roam_core.config.yamlio import compose

    node = compose(text, source)
    result = RulesFile(Path(source))
    if node is None:
        return result
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{source}:{_line(node)}: expected a mapping with the keys "
                          f"{', '.join(KNOWN_KEYS)}")
    seen: set[str] = set()
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        where = f"{source}:{_line(key_node)}"
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (expected one of "
                              f"{', '.join(KNOWN_KEYS)})")
        if key in seen:
            raise ConfigError(f"{where}: {key!r} is given twice")
        seen.add(key)
        for item, line in _string_list(value_node, key, source):
            if key == "host_keys":
                result.host_keys.append(_host_key(item, f"{source}:{line}"))
            else:
                result.rules.append(_rule(item, SCOPE_KEYS[key], line, source))
    return result


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _string_list(node: Any, key: str, source: str) -> list[tuple[str, int]]:
    import yaml

    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return []  # `shared:` with nothing after it
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"{source}:{_line(node)}: {key!r} must be a list of patterns "
                          f"(write '{key}: [PATTERN, ...]' or one '- PATTERN' per line)")
    items: list[tuple[str, int]] = []
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode) or item.tag != "tag:yaml.org,2002:str":
            raise ConfigError(f"{source}:{_line(item)}: every entry of {key!r} must be a "
                              "string pattern")
        items.append((item.value, _line(item)))
    return items


def _rule(pattern: str, scope: Scope, line: int, source: str) -> UserRule:
    where = f"{source}:{line}"
    try:
        glob = Glob(pattern)
    except PatternError as error:
        raise ConfigError(f"{where}: {error}") from None
    if scope is Scope.SHARED:
        why = refusal(pattern, glob)
        if why:
            raise ConfigError(f"{where}: refusing to share {pattern!r}: {why}")
    return UserRule(pattern, scope, line)


def _host_key(pattern: str, where: str) -> str:
    segments = pattern.split(".")
    if not pattern.strip() or any(not segment.strip() for segment in segments):
        raise ConfigError(f"{where}: host key {pattern!r} must be a dotted key path such as "
                          "'display.interface' or 'mcp_servers.*.command'")
    return pattern


TEMPLATE = """\
# roam/rules.yaml: this device's own scope rules. It never leaves this machine.
#
# Rules are relative globs matched against paths of the home, before anything is read:
#   SOUL.md          the top-level file only        skills/foo/   a folder and all below it
#   *.md             one name, any characters       **/notes.md   at any depth
# This file's rules come first (the first matching line wins), then roam's defaults.
# Nothing under roam/ and no credential file (.env, auth.json, ...) can ever be shared.
# `roam rules` shows the effective rules and what each part of this home does.

# Share more than the defaults. `hooks/` travels only through an explicit rule here, and
# sharing it means this machine runs code written on your other machines.
shared: []
#  - hooks/

# Keep paths on this machine: they are neither sent nor replaced by a pull.
# Excluding a whole profile: profiles/NAME/
local: []
#  - profiles/work/
#  - skills/experimental/

# Ignore paths entirely.
ignored: []
#  - skills/**/scratch/

# Extra config.yaml keys that stay on this machine (dotted paths, `*` for one level),
# in addition to terminal, paths, display.interface, browser.executable,
# mcp_servers.*.command and plugins.entries.roam.
host_keys: []
#  - display.skin
"""
