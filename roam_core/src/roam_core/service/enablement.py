"""Is roam enabled in this Hermes, and is this Hermes a version roam was tested with?

Read the way Hermes 0.19 reads it, without importing Hermes: `plugins.enabled` in the
home's config.yaml is an allow-list (a missing key enables nothing), `plugins.disabled` is a
deny-list that always wins, and an entry matches on the key or the bare name.
"""

from __future__ import annotations

from pathlib import Path

#: Hermes versions roam's tests run against (major.minor); others may work, untested.
TESTED_HERMES = ("0.19",)

ENABLE = "hermes plugins enable roam --no-allow-tool-override"


def _names(value: object) -> set[str]:
    if not isinstance(value, list):
        return set()
    names: set[str] = set()
    for item in value:
        text = str(item)
        names.update({text, text.replace(":", "/").rsplit("/", 1)[-1]})
    return names


def plugin_state(root: Path) -> str:
    """`enabled`, `disabled` (listed under plugins.disabled) or `not enabled`."""
    from roam_core.settings import load_yaml_mapping

    plugins = load_yaml_mapping(root / "config.yaml").get("plugins")
    plugins = plugins if isinstance(plugins, dict) else {}
    if "roam" in _names(plugins.get("disabled")):
        return "disabled"
    return "enabled" if "roam" in _names(plugins.get("enabled")) else "not enabled"


def problem(root: Path, hermes_version: str | None) -> str | None:
    """One line saying why Hermes will not run roam here, or None when it will (or no Hermes)."""
    if hermes_version is None:
        return None
    state = plugin_state(root)
    if state == "disabled":
        return ("roam is installed but listed under plugins.disabled in config.yaml, which "
                f"wins: remove it there, then {ENABLE} (takes effect in the next session)")
    if state == "not enabled":
        return (f"roam is installed but not enabled in Hermes, so auto sync never runs: "
                f"{ENABLE} (takes effect in the next session)")
    return None


def version_note(hermes_version: str | None) -> str | None:
    """A warning when the installed Hermes is outside the range roam was tested with."""
    if hermes_version is None:
        return None
    minor = ".".join(hermes_version.split(".")[:2])
    if minor in TESTED_HERMES:
        return None
    return (f"Hermes {hermes_version} is outside the versions roam was tested with "
            f"({', '.join(v + '.x' for v in TESTED_HERMES)}); report what breaks")
