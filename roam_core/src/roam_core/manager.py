"""The plugin manager: discovery through entry points, calls through a typed facade.

Nothing is scanned at import time. The first call to a facade method loads the entry
points of group `roam.plugins` with stevedore; a plugin that fails to import is recorded
as `broken` (with its error) instead of crashing roam, and every loaded module is
registered with pluggy. A plugin that pluggy refuses (a misspelled hook, an argument no spec
offers) or whose hook raises is `broken` too; every other plugin keeps working. Hooks are
called through pluggy, one plugin at a time, so one plugin's failure is charged to it alone.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from roam_core import hookspecs
from roam_core.errors import PluginError
from roam_core.types import (
    BackendPlugin,
    MergeFormat,
    PluginInfo,
    PluginStatus,
    ScopeRuleSet,
    SinkPlugin,
)

log = logging.getLogger(__name__)

GROUP = "roam.plugins"
DISABLE_ENV = "ROAM_DISABLED_PLUGINS"

#: Where the first-party plugins live, so a missing one's error names the fix.
INSTALL_HINTS = {
    "local": "roam-backend-local (pip install 'roam-core[local]')",
    "s3": "roam-backend-s3 (pip install 'roam-core[s3]')",
    "git": "roam-backend-git (pip install 'roam-core[git]')",
    "discord": "roam-sink-discord (pip install 'roam-core[discord]')",
}



Origin = tuple[str, str]


@dataclass
class _Entry:
    name: str
    #: (distribution, version), or a function giving them when first asked for
    origin: Origin | Callable[[], Origin]
    status: PluginStatus
    summary: str = ""
    error: str = ""
    module: Any = None
    kinds: list[str] = field(default_factory=list)

    @property
    def distribution(self) -> str:
        return self._origin()[0]

    @property
    def version(self) -> str:
        return self._origin()[1]

    def _origin(self) -> Origin:
        if callable(self.origin):
            self.origin = self.origin()
        return self.origin


def _distribution_map(group: str) -> dict[tuple[str, str], tuple[str, str]]:
    """Map (entry-point name, value) to (distribution, version) for one group."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for ep in importlib.metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        if dist is not None:
            found[(ep.name, ep.value)] = (dist.metadata["Name"], dist.version)
    return found


class _Origins:
    """Which distribution and version provide each entry point, read on first use.

    Reading every plugin's METADATA costs more than loading the plugins, and only listings
    and errors name distributions.
    """

    def __init__(self, group: str) -> None:
        self.group = group
        self._map: dict[tuple[str, str], Origin] | None = None

    def of(self, name: str, value: str) -> Callable[[], Origin]:
        def resolve() -> Origin:
            if self._map is None:
                self._map = _distribution_map(self.group)
            return self._map.get((name, value), ("?", "?"))
        return resolve


def _first_line(text: str | None) -> str:
    stripped = (text or "").strip()
    return stripped.splitlines()[0].strip() if stripped else ""


def disabled_names() -> set[str]:
    """Plugin names blocked by `ROAM_DISABLED_PLUGINS` (comma or space separated)."""
    raw = os.environ.get(DISABLE_ENV, "")
    return {part.strip() for part in raw.replace(",", " ").split() if part.strip()}


class PluginManager:
    """Loads roam's plugins once and answers typed questions about them."""

    def __init__(self, group: str = GROUP) -> None:
        self.group = group
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._entries: dict[str, _Entry] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Discover and register every entry-point plugin. Idempotent."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        from stevedore import EnabledExtensionManager

        origins = _Origins(self.group)
        blocked = disabled_names()
        failures: list[tuple[Any, BaseException]] = []

        def on_failure(_manager: Any, entry_point: Any, error: BaseException) -> None:
            failures.append((entry_point, error))

        def check(ext: Any) -> bool:
            return ext.name not in blocked

        manager = EnabledExtensionManager(
            self.group,
            check_func=check,
            invoke_on_load=False,
            on_load_failure_callback=on_failure,
        )
        for ep in importlib.metadata.entry_points(group=self.group) if blocked else ():
            if ep.name in blocked:
                self._entries[ep.name] = _Entry(ep.name, origins.of(ep.name, ep.value),
                                                "disabled")
        for entry_point, error in failures:
            message = f"{type(error).__name__}: {error}"
            log.warning("roam plugin %s failed to load: %s", entry_point.name, message)
            self._entries[entry_point.name] = _Entry(
                entry_point.name, origins.of(entry_point.name, entry_point.value), "broken",
                error=message
            )
        for ext in manager.extensions:
            origin = origins.of(ext.name, ext.entry_point.value)
            try:
                self._add(ext.name, ext.plugin, origin)
            except pluggy.PluginValidationError as error:
                log.warning("roam plugin %s is invalid: %s", ext.name, error)
                self._entries[ext.name] = _Entry(ext.name, origin, "broken",
                                                 error=f"invalid plugin: {error}")

    def _add(self, name: str, module: Any, origin: Origin | Callable[[], Origin]) -> None:
        previous = self._entries.get(name)
        if previous is not None and previous.status == "active":
            distribution = origin()[0] if callable(origin) else origin[0]
            raise PluginError(
                f"two plugins are named {name!r}: {previous.distribution} and {distribution}",
                plugin=name,
            )
        try:
            hash(module)
        except TypeError:
            raise PluginError(f"plugin {name!r} must be a module or another hashable object",
                              name) from None
        try:
            self._pm.register(module, name=name)
        except pluggy.PluginValidationError:
            raise
        except ValueError as error:
            raise PluginError(f"plugin {name!r} cannot be registered: {error}", name) from None
        try:
            # Everything registered before passed this check, so a failure is this plugin's.
            self._pm.check_pending()
        except pluggy.PluginValidationError:
            self._pm.unregister(module)
            raise
        kinds = [kind for hook, kind in hook_kinds().items() if hasattr(module, hook)]
        doc = getattr(module, "__doc__", None)
        self._entries[name] = _Entry(
            name, origin, "active", _first_line(doc), module=module, kinds=kinds
        )

    def register(
        self, module: ModuleType | object, name: str, distribution: str = "(in-process)"
    ) -> None:
        """Register a plugin object directly (tests, embedding). Loads entry points first.

        Unlike an entry point, a plugin registered here that pluggy refuses raises
        `pluggy.PluginValidationError`: the caller wrote it and should hear about it.
        """
        with self._lock:
            self.load()
            self._add(name, module, (distribution, "0"))

    # -- typed facade --------------------------------------------------------------------

    def _collect(self, hook: str, kwargs: dict[str, Any]) -> list[tuple[_Entry, Any]]:
        self.load()
        impls = getattr(self._pm.hook, hook).get_hookimpls()
        results: list[tuple[_Entry, Any]] = []
        for impl in reversed(impls):
            entry = self._entries.get(impl.plugin_name)
            if entry is None or entry.status != "active":
                continue
            # One plugin at a time, through pluggy (which passes each hook the subset of
            # arguments it asks for), so that a raising hook is charged to its own plugin.
            alone = self._pm.subset_hook_caller(
                hook, remove_plugins=[other.plugin for other in impls if other is not impl])
            try:
                records = [record for batch in alone(**kwargs) for record in (batch or ())]
            except Exception as error:  # a plugin's bug must not take roam down
                log.warning("roam plugin %s failed in %s: %s", entry.name, hook, error)
                entry.status = "broken"
                entry.error = f"{type(error).__name__}: {error}"
                continue
            results.extend((entry, record) for record in records)
        return results

    def _unique(self, kind: str,
                records: Iterable[tuple[_Entry, Any]]) -> dict[str, tuple[_Entry, Any]]:
        named: dict[str, tuple[_Entry, Any]] = {}
        for entry, record in records:
            if record.name in named:
                other = named[record.name][0]
                raise PluginError(
                    f"two {kind}s are named {record.name!r}: provided by "
                    f"{other.distribution} and {entry.distribution}",
                    plugin=record.name,
                )
            named[record.name] = (entry, record)
        return named

    def storage_backends(self) -> dict[str, BackendPlugin]:
        """Every installed backend by name. Duplicate names fail naming both distributions."""
        found = self._unique("backend", self._collect("roam_storage_backends", {}))
        return {name: record for name, (_entry, record) in found.items()}

    def backend(self, name: str) -> BackendPlugin:
        """The backend called `name`, or a `PluginError` that names how to install it."""
        backends = self.storage_backends()
        if name in backends:
            return backends[name]
        return self._missing("backend", name, backends)

    def session_sinks(self) -> dict[str, SinkPlugin]:
        """Every installed session sink by name."""
        found = self._unique("sink", self._collect("roam_session_sinks", {}))
        return {name: record for name, (_entry, record) in found.items()}

    def sink(self, name: str) -> SinkPlugin:
        """The sink called `name`, or a `PluginError` that names how to install it."""
        sinks = self.session_sinks()
        if name in sinks:
            return sinks[name]
        return self._missing("sink", name, sinks)

    def scope_rules(self, home: Path) -> list[ScopeRuleSet]:
        """Every provider's rule sets for `home`, sorted by provider name (never install order)."""
        sets = [record for _entry, record in self._collect("roam_scope_rules", {"home": home})]
        return sorted(sets, key=lambda rule_set: rule_set.provider)

    def merge_formats(self) -> list[MergeFormat]:
        """Every plugin's entry-merge formats, sorted by name. Duplicate names fail loudly."""
        found = self._unique("merge format", self._collect("roam_merge_formats", {}))
        return [record for _name, (_entry, record) in sorted(found.items())]

    def _missing(self, kind: str, name: str, known: dict[str, Any]) -> Any:
        entry = self._entries.get(name)
        if entry is not None and entry.status == "broken":
            raise PluginError(f"{kind} {name!r} is broken: {entry.error}", plugin=name)
        if entry is not None and entry.status == "disabled":
            raise PluginError(f"{kind} {name!r} is disabled by {DISABLE_ENV}", plugin=name)
        hint = INSTALL_HINTS.get(name)
        have = ", ".join(sorted(known)) or "none"
        fix = f"; install {hint}" if hint else ""
        raise PluginError(f"no {kind} named {name!r} is installed (have: {have}){fix}", name)

    # -- listings ------------------------------------------------------------------------

    def plugins(self) -> list[PluginInfo]:
        """Every discovered plugin, active, broken or disabled, sorted by name."""
        self.load()
        return sorted((self._info(entry, entry.summary) for entry in self._entries.values()),
                      key=lambda info: info.name)

    def _info(self, entry: _Entry, summary: str, name: str | None = None) -> PluginInfo:
        return PluginInfo(
            name=name or entry.name,
            distribution=entry.distribution,
            version=entry.version,
            status=entry.status,
            summary=summary or entry.error,
            kinds=tuple(entry.kinds),
            error=entry.error,
        )

    def listing(self, kind: str, home: Path | None = None) -> list[PluginInfo]:
        """Rows for `roam backends|sinks|rules list`: records plus broken/disabled plugins.

        `home` is what rule providers are asked about (required for the `rules` kind).
        """
        hook = next(name for name, hook_kind in hook_kinds().items() if hook_kind == kind)
        if kind == "rules" and home is None:
            raise ValueError("listing rule providers needs the home they classify")
        kwargs: dict[str, Any] = {"home": home} if home is not None else {}
        rows: list[PluginInfo] = []
        for entry, record in self._collect(hook, kwargs):
            name = getattr(record, "name", None) or getattr(record, "provider", entry.name)
            rows.append(self._info(entry, getattr(record, "summary", ""), name=name))
        rows.extend(self._info(entry, entry.summary) for entry in self._entries.values()
                    if entry.status != "active")
        return sorted(rows, key=lambda info: info.name)


_default: PluginManager | None = None
_default_lock = threading.Lock()


def get_manager() -> PluginManager:
    """The process-wide manager, created (not loaded) on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = PluginManager()
        return _default


def reset_manager() -> None:
    """Forget the process-wide manager (tests, after changing sys.path or the environment)."""
    global _default
    with _default_lock:
        _default = None


def hook_names() -> list[str]:
    """The names of every hookspec, for documentation and tests."""
    return [name for name in dir(hookspecs) if name.startswith("roam_")]


def hook_kinds() -> dict[str, str]:
    """Each hookspec's name and the kind of record it yields, as hookspecs.py marks them."""
    return {name: getattr(hookspecs, name).roam_kind for name in hook_names()}

