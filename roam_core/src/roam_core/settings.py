"""roam's settings: `plugins.entries.roam.settings` in the root home's `config.yaml`."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.errors import ConfigError

if TYPE_CHECKING:
    from roam_core.manager import PluginManager
    from roam_core.types import BackendPlugin, SinkPlugin

#: Every core setting with its default; plugins declare their own through `Setting` records.
DEFAULTS: dict[str, Any] = {
    "backend": "local",
    "device_name": None,
    "backup_keep": 5,
    "allow_agent_apply": False,
    "allow_newer_hermes": False,
    "auto_push": False,
    "auto_pull_shared": False,
    "push_debounce_seconds": 300,
    "mirror_sinks": [],
    "sync_sessions": False,
    "sessions_max_mb": 50,
    "sync_cron": False,
    "max_file_mb": 100,
    "force_guard_percent": 20,
    "force_guard_paths": 100,
    "operation_timeout_seconds": None,
    # above the default push budget (operation_timeout_seconds, 1 h), with room for clocks
    # that disagree
    "prune_grace_minutes": 120,
    "prune_repack_threshold": 10,
    "retention": {},
    "redact_env_values": True,
    "redact_patterns": [],
    "never_list_exceptions": [],
    "redact_memories": False,
}

#: What each core setting means (`roam config set --help`, docs/settings.md).
CORE_HELP: dict[str, str] = {
    "backend": "where the encrypted store lives: `local`, `s3`, `git` (see `roam backends "
               "list`)",
    "device_name": "the name `roam init` gives this machine (unique in the fleet); empty "
                   "means the host name; later, `roam devices rename`",
    "backup_keep": "how many `roam/backups/<time>/` folders of replaced files to keep "
                   "(folders holding a never-pushed version are kept until `roam backups drop`)",
    "allow_agent_apply": "let the agent's `roam_pull` tool install a pull (otherwise it only "
                         "shows the plan)",
    "allow_newer_hermes": "let `roam pull --apply` install a generation pushed from a newer "
                          "Hermes major/minor than this device runs (refused by default)",
    "auto_push": "inside Hermes, push after turns (debounced); set by `roam auto on|off`",
    "auto_pull_shared": "inside Hermes, pull skills/, memories/ and SOUL.md when a session "
                        "starts; set by `roam auto on|off`",
    "push_debounce_seconds": "at most one automatic push per this many seconds",
    "mirror_sinks": "the session mirror's sinks, e.g. `[discord]`; empty means off",
    "sync_sessions": "optional tier: publish this device's finished sessions as a read-only "
                     "archive, and receive the other devices' archives",
    "sessions_max_mb": "size cap of the session archive tier, in MiB",
    "sync_cron": "optional tier: share `cron/jobs.json` (cron job definitions)",
    "max_file_mb": "the largest shared file roam pushes or accepts, in MiB",
    "force_guard_percent": "`push --force` asks first when it would remove more than this "
                           "percentage of the remote's paths",
    "force_guard_paths": "`push --force` asks first when it would remove more than this many "
                         "paths (and always when this device never pulled)",
    "operation_timeout_seconds": "time budget of one push, pull, restore or check, in seconds; "
                                 "unset: an hour, or longer when the transfer needs it (its "
                                 "bytes at 256 KiB/s plus half a second per file); a push that "
                                 "runs out resumes when run again (what was uploaded is kept)",
    "prune_grace_minutes": "`roam prune --apply` deletes only what an earlier run marked at "
                           "least this long ago (pushes running meanwhile stay safe); keep "
                           "it at 60 or more when other devices push",
    "prune_repack_threshold": "`roam prune --apply` repacks a pack at least this many percent "
                              "unused (its live blobs copied into new packs, the old pack "
                              "then deleted like an unreferenced one); 100 repacks nothing",
    "retention": "the fleet's retention policy, with `roam forget`'s rules as keys, e.g. "
                 "`{keep_daily: 14, keep_monthly: 12}`; auto sync applies it (forget only) "
                 "after each successful automatic push; empty means keep everything; "
                 "`roam prune --apply` stays a deliberate act",
    "redact_env_values": "the mirror masks every value of the root's and the profile's `.env` "
                         "(8 characters or more) whatever its shape; off: only secret-named "
                         "and random-looking values",
    "redact_patterns": "your own secret patterns (regular expressions), masked by the mirror "
                       "and looked for by the push scanner; a group named `secret` marks the "
                       "part to mask",
    "never_list_exceptions": "credential files (by exact path) you share on purpose despite "
                              "the never-list; every push warns about each one",
    "redact_memories": "a secret-looking value inside a memory entry (memories/MEMORY.md, "
                       "USER.md) is pushed as a redacted copy of that entry, with a warning, "
                       "instead of stopping the push; the local file keeps the original (off "
                       "by default: the other devices then hold a memory that differs)",
}

#: How `roam config set` checks a core setting's value (the rest follow their default's type).
_CORE_KINDS = {"backend": "backend", "device_name": "text",
               "operation_timeout_seconds": "number", "mirror_sinks": "sinks",
               "redact_patterns": "patterns", "never_list_exceptions": "credential files",
               # checked by `roam config set` with the policy parser (engine layer)
               "retention": "retention policy"}

SETTINGS_PATH = ("plugins", "entries", "roam", "settings")


def optional_number(settings: Mapping[str, Any], name: str) -> float | None:
    """A numeric setting whose default is "unset" (None), checked like `number` when set."""
    raw = settings.get(name)
    return None if raw is None or raw == "" else finite_number(name, raw)


def number(settings: Mapping[str, Any], name: str) -> float:
    """A numeric core setting (its default when unset) as a finite number of at least 0.

    Raises:
        ConfigError: naming the setting and the value when it is not such a number.
    """
    raw = settings.get(name)
    if raw is None or raw == "":
        raw = DEFAULTS[name]
    return finite_number(name, raw)


def finite_number(name: str, raw: Any) -> float:
    """`raw` as a finite number of at least 0, or a `ConfigError` naming the setting."""
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"setting {name} must be a number of at least 0, not {raw!r}")
    return value


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML file that must hold a mapping; a missing file is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    from roam_core.config.yamlio import safe_load

    data = safe_load(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_settings(root: Path) -> dict[str, Any]:
    """The effective settings of the root home: defaults overlaid with config.yaml's block."""
    data: Any = load_yaml_mapping(root / "config.yaml")
    for part in SETTINGS_PATH:
        data = data.get(part) if isinstance(data, dict) else None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{root / 'config.yaml'}: roam's settings block must be a mapping")
    merged = dict(DEFAULTS)
    merged.update(data or {})
    return merged


def write_settings(root: Path, values: dict[str, Any]) -> None:
    """Set keys of roam's settings block in the root config.yaml, keeping comments and order.

    The one writer of roam's settings (`roam config set`, `roam auto on|off`): a round-trip
    parse, the keys set, and an atomic replace that keeps the file's mode.
    """

    def update(block: dict[str, Any]) -> bool:
        block.update(values)
        return True

    _edit_block(root, update)


def remove_setting(root: Path, name: str) -> bool:
    """Delete one key of roam's settings block, keeping comments; False when it is not set."""

    def remove(block: dict[str, Any]) -> bool:
        return block.pop(name, _ABSENT) is not _ABSENT

    return _edit_block(root, remove)


_ABSENT = object()


def _edit_block(root: Path, edit: Callable[[dict[str, Any]], bool]) -> bool:
    """Round-trip config.yaml, let `edit` change roam's block, write it back if it did."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from roam_core.config.yamlio import yaml_error
    from roam_core.fs import write_atomic

    path = root / "config.yaml"
    yaml = YAML()
    yaml.preserve_quotes = True
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = yaml.load(text) if text.strip() else None
    except YAMLError as error:
        raise yaml_error(error, str(path)) from None
    except RecursionError:  # ruamel recurses once per nesting level
        raise ConfigError(f"{path}: nested too deeply") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    if document is None:
        document = {}
    node = document
    for part in SETTINGS_PATH:
        if not isinstance(node, dict):
            raise ConfigError(f"{path}: {'.'.join(SETTINGS_PATH)} is not a mapping")
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    if not isinstance(node, dict):
        raise ConfigError(f"{path}: {'.'.join(SETTINGS_PATH)} is not a mapping")
    if not edit(node):
        return False
    out = io.StringIO()
    yaml.dump(document, out)
    root.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    write_atomic(path, out.getvalue().encode("utf-8"), mode=mode)
    return True


# -- the registry: every setting core and the installed plugins declare ------------------


@dataclass(frozen=True)
class Declared:
    """One setting roam knows: its default, how values are checked, who declared it."""

    name: str
    default: Any
    kind: str  # switch, number, text, backend, sinks
    plugin: str  # "core", or the backend or sink that declared it
    help: str = ""


@dataclass
class Registry:
    """Every known setting by name, the installed backends and sinks, and declaration problems.

    Core's names come first and cannot be taken: a plugin declaring `backend` (or another
    plugin's name) is not registered for it, and the clash is listed in `problems`.
    """

    settings: dict[str, Declared] = field(default_factory=dict)
    backends: tuple[str, ...] = ()
    sinks: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)

    def lookup(self, name: str) -> Declared:
        """The setting called `name`, or a `ConfigError` naming the closest known one."""
        if name in self.settings:
            return self.settings[name]
        near = difflib.get_close_matches(name, list(self.settings), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"unknown setting {name!r}{hint}; roam config list shows every one")

    def check(self, name: str, value: Any) -> None:
        """Refuse a value the setting cannot take; unknown names are refused by `lookup`."""
        declared = self.lookup(name)
        if declared.kind == "switch":
            if not isinstance(value, bool):
                raise ConfigError(f"setting {name} is a switch: true or false, not {value!r}")
        elif declared.kind == "number":
            if isinstance(value, str):  # YAML parsed it as text: "5 MB", "fast"
                raise ConfigError(f"setting {name} must be a number of at least 0, "
                                  f"not {value!r}")
            finite_number(name, value)
        elif declared.kind == "text":
            if isinstance(value, bool | list | dict):
                raise ConfigError(f"setting {name} takes text, not {value!r}")
        elif declared.kind == "backend":
            _one_of(name, value, self.backends, "backend")
        elif declared.kind == "sinks":
            if not isinstance(value, list):
                raise ConfigError(f"setting {name} is a list of sink names, like [discord]")
            for item in value:
                _one_of(name, item, self.sinks, "sink")
        elif declared.kind == "patterns":
            from roam_core.secretscan.rules import user_rules

            user_rules(value)  # a list of valid regular expressions, or a ConfigError
        elif declared.kind == "credential files":
            from roam_core.scope.never import allowed_credentials

            allowed_credentials(value)


def _one_of(name: str, value: Any, installed: tuple[str, ...], kind: str) -> None:
    if value in installed:
        return
    from roam_core.manager import INSTALL_HINTS

    have = ", ".join(installed) or "none"
    hint = INSTALL_HINTS.get(str(value))
    fix = f"; install {hint}" if hint else ""
    raise ConfigError(f"setting {name}: no {kind} named {value!r} is installed "
                      f"(have: {have}){fix}")


def _kind_of(default: Any) -> str:
    if isinstance(default, bool):
        return "switch"
    if isinstance(default, int | float):
        return "number"
    return "text"


def registry(manager: PluginManager) -> Registry:
    """Core's settings, then each installed backend's and sink's (secrets excluded)."""
    found = Registry()
    for name, default in DEFAULTS.items():
        found.settings[name] = Declared(name, default, _CORE_KINDS.get(name, _kind_of(default)),
                                        "core", CORE_HELP.get(name, ""))
    backends = manager.storage_backends()
    sinks = manager.session_sinks()
    found.backends, found.sinks = tuple(sorted(backends)), tuple(sorted(sinks))
    records: list[tuple[str, BackendPlugin | SinkPlugin]] = [
        *sorted(backends.items()), *sorted(sinks.items())]
    for owner, record in records:
        for setting in record.settings:
            if setting.secret:
                continue
            taken = found.settings.get(setting.name)
            if taken is not None:
                found.problems.append(f"plugin {owner} declares setting {setting.name!r}, "
                                      f"which {taken.plugin} already declares; ignored")
                continue
            found.settings[setting.name] = Declared(
                setting.name, setting.default, _kind_of(setting.default), owner, setting.help)
    return found



# -- the typed record: core's settings as the engine reads them ---------------------------


@dataclass(frozen=True)
class CoreSettings:
    """roam's own settings, typed, built once per operation from the effective block.

    Switches count only when they are literally `true` (a string "true" is not): the same
    rule every reader applied to the raw mapping before. Numbers are checked when read
    (`number`), so a bad value in one tier's setting stops only what uses it.
    """

    backend: str
    device_name: str | None
    allow_agent_apply: bool
    allow_newer_hermes: bool
    auto_push: bool
    auto_pull_shared: bool
    sync_sessions: bool
    sync_cron: bool
    redact_env_values: bool
    redact_memories: bool
    #: keys of the block that no core setting names and no `known` name covers
    unknown: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def build(cls, settings: Mapping[str, Any], known: Collection[str] = ()) -> CoreSettings:
        """The record of an effective settings mapping; `known` adds plugins' setting names."""

        def switch(name: str) -> bool:
            return settings.get(name) is True

        device_name = settings.get("device_name")
        return cls(
            backend=str(settings.get("backend") or "local"),
            device_name=str(device_name) if device_name else None,
            allow_agent_apply=switch("allow_agent_apply"),
            allow_newer_hermes=switch("allow_newer_hermes"),
            auto_push=switch("auto_push"), auto_pull_shared=switch("auto_pull_shared"),
            sync_sessions=switch("sync_sessions"), sync_cron=switch("sync_cron"),
            # on unless literally false: masking every .env value is the safe default
            redact_env_values=settings.get("redact_env_values", True) is not False,
            redact_memories=switch("redact_memories"),
            unknown=tuple(sorted(set(settings) - set(DEFAULTS) - set(known))),
            raw=dict(settings))

    def number(self, name: str) -> float:
        """A numeric core setting, checked now (see `number`)."""
        return number(self.raw, name)

    @property
    def never_list_exceptions(self) -> object:
        """`never_list_exceptions` as written, checked where the never-list reads it."""
        return self.raw.get("never_list_exceptions")

    @property
    def redact_patterns(self) -> object:
        """`redact_patterns` as written, checked when a scan or the mirror compiles it.

        `secretscan.rules.user_rules` checks and compiles it, so a bad pattern stops only
        what masks with it.
        """
        return self.raw.get("redact_patterns")

    @property
    def mirror_sinks(self) -> list[str]:
        """The sink names in `mirror_sinks` (a list, or one name); empty: the mirror is off.

        Checked when read, so a bad value stops only the mirror.

        Raises:
            ConfigError: when the value is not a name or a list of names.
        """
        raw = self.raw.get("mirror_sinks") or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
            raise ConfigError("mirror_sinks must be a list of sink names, e.g. [discord]")
        seen: list[str] = []
        for name in raw:
            if name.strip() and name.strip() not in seen:
                seen.append(name.strip())
        return seen
