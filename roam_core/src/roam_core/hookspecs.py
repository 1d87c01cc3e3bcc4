"""The contract between roam's core and its plugins.

A plugin is a module registered under the entry-point group `roam.plugins`. It implements
any of the hooks below with the public `hookimpl` marker. Every hook takes no arguments or
plural nouns, and yields typed, frozen records from `roam_core.types`. Core never calls a
hook directly at a call site; it goes through the typed facade in `roam_core.manager`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pluggy

from roam_core.types import BackendPlugin, MergeFormat, ScopeRuleSet, SinkPlugin

PROJECT = "roam"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

_Spec = TypeVar("_Spec", bound=Callable[..., object])


def _kind(kind: str) -> Callable[[_Spec], _Spec]:
    """Mark a hookspec with the kind of record it yields (the listing verbs use it)."""
    def mark(spec: _Spec) -> _Spec:
        spec.roam_kind = kind  # type: ignore[attr-defined]
        return hookspec(spec)
    return mark


@_kind("backend")
def roam_storage_backends() -> Iterator[BackendPlugin]:
    """Yield the storage backends this plugin provides.

    Each `BackendPlugin` names the backend (the value of the `backend:` setting), a one-line
    summary, the settings it reads and a factory `factory(settings, context) -> Backend`.
    The factory must not touch the network; the first backend call may. A backend name must
    be unique across installed plugins: a duplicate is an error naming both distributions.
    """
    yield from ()


@_kind("rules")
def roam_scope_rules(home: Path) -> Iterator[ScopeRuleSet]:
    """Yield rule sets that classify paths of `home` as shared, local or ignored.

    Rules are matched on relative POSIX paths before any file is read. Inside one set the
    first matching rule wins; across providers core applies one documented precedence
    (the device's `rules.yaml` first, then the strictest answer of all providers), so the
    order in which plugins were installed never changes what syncs. Nothing under `roam/`
    and no credential file can be made shared by any provider.
    """
    yield from ()


@_kind("sink")
def roam_session_sinks() -> Iterator[SinkPlugin]:
    """Yield the session-event sinks this plugin provides.

    A sink receives redacted `TurnEvent`s from the background sender, never on the agent's
    thread. A sink that fails never fails a push, a pull or a turn: every call is isolated
    and logged, and undelivered events stay spooled.
    """
    yield from ()


@_kind("merge")
def roam_merge_formats() -> Iterator[MergeFormat]:
    """Yield the entry-structured file formats this plugin can merge on pull.

    Each `MergeFormat` names the files it covers with scope-style globs and gives a pure
    function `merge(base, local, remote, *, overwrite_conflicts=False)` returning a
    `roam_core.merge.EntryMerge` or None for bytes that are not a valid entry list. Core's own
    Hermes memory format is consulted first; among plugins the first format (by name) whose
    pattern matches a path wins. A merge only ever applies to shared paths, and a duplicate
    format name is an error naming both distributions.
    """
    yield from ()
