"""roam's settings: `plugins.entries.roam.settings` in the root home's `config.yaml`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roam_core.errors import ConfigError

#: Every core setting with its default; plugins declare their own through `Setting` records.
DEFAULTS: dict[str, Any] = {
    "backend": "local",
    "device_name": None,
    "backup_keep": 5,
    "allow_agent_apply": False,
    "auto_push": False,
    "auto_pull_shared": False,
    "push_debounce_seconds": 300,
    "mirror_sinks": [],
    "sync_sessions": False,
    "sessions_max_mb": 50,
    "sync_cron": False,
    "max_file_mb": 100,
}

SETTINGS_PATH = ("plugins", "entries", "roam", "settings")


def number(settings: Mapping[str, Any], name: str) -> float:
    """A numeric core setting (its default when unset) as a finite number of at least 0.

    Raises:
        ConfigError: naming the setting and the value when it is not such a number.
    """
    raw = settings.get(name)
    if raw is None or raw == "":
        raw = DEFAULTS[name]
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"setting {name} must be a number of at least 0, not {raw!r}")
    return value


def check_core_setting(name: str, value: Any) -> None:
    """Refuse a value a core setting cannot take (`roam config set` checks before writing).

    Raises:
        ConfigError: for a non-number where a number belongs, or a non-boolean switch.
    """
    default = DEFAULTS.get(name)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"setting {name} is a switch: true or false, not {value!r}")
    elif isinstance(default, int):
        number({name: value}, name)


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML file that must hold a mapping; a missing file is empty."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        from roam_core.config.yamlio import yaml_error

        raise yaml_error(error, str(path)) from None
    except RecursionError:  # PyYAML recurses once per nesting level
        raise ConfigError(f"{path}: nested too deeply") from None
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
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from roam_core.config.yamlio import yaml_error
    from roam_core.engine.fs import write_atomic

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
    node.update(values)
    out = io.StringIO()
    yaml.dump(document, out)
    root.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    write_atomic(path, out.getvalue().encode("utf-8"), mode=mode)
