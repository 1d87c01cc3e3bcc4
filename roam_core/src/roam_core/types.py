"""Typed, frozen registration records that plugins yield from roam's hooks."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from roam_core.deadline import Deadline
    from roam_core.storage import Backend


@dataclass(frozen=True)
class Setting:
    """One setting a plugin reads from `plugins.entries.roam.settings`."""

    name: str
    help: str
    default: Any = None
    required: bool = False
    secret: bool = False


@dataclass(frozen=True)
class PluginContext:
    """What core hands a plugin factory: where it runs and how it reads secrets.

    `secret(name)` is the only way a plugin may read a credential: inside Hermes it goes
    through Hermes's secret scope, in the standalone CLI through the environment and the
    `ROAM_*` lines of the root home's `.env`. Plugins never read `.env` themselves.
    """

    home: Path
    state_dir: Path
    secret: Callable[[str], str | None]
    deadline: Deadline | None = None


BackendFactory = Callable[[Mapping[str, Any], PluginContext], "Backend"]

#: A plugin's state in `roam plugins list`: working, failed (with its reason), or switched off.
PluginStatus = Literal["active", "broken", "disabled"]


class MergeFunction(Protocol):
    """A merge format's merge: `(base, local, remote, *, overwrite_conflicts)` → a merge.

    It returns a `roam_core.merge.EntryMerge`, or None when the bytes are not a valid entry
    list; anything else is treated as None (the engine checks, it never guesses). Declared
    as `object` here because the kernel sits below `merge/`.
    """

    def __call__(self, base: bytes | None, local: bytes, remote: bytes, /, *,
                 overwrite_conflicts: bool = False) -> object:
        """Merge the three versions of one file."""


@dataclass(frozen=True)
class BackendPlugin:
    """A storage backend the user selects with `backend: NAME`."""

    name: str
    summary: str
    factory: BackendFactory
    settings: tuple[Setting, ...] = ()


@dataclass(frozen=True)
class SinkPlugin:
    """A destination for session events, enabled with `mirror_sinks: [NAME]`."""

    name: str
    summary: str
    factory: Callable[[Mapping[str, Any], PluginContext], Any]
    settings: tuple[Setting, ...] = ()


class Scope(enum.Enum):
    """Where a path of the home belongs. Stricter classes sort higher."""

    SHARED = "shared"
    LOCAL = "local"
    IGNORED = "ignored"

    @property
    def strictness(self) -> int:
        return {"shared": 0, "local": 1, "ignored": 2}[self.value]


@dataclass(frozen=True)
class ScopeRule:
    """One glob rule: paths matching `pattern` (relative, POSIX, `**` allowed) belong to `scope`.

    A trailing `/` matches a directory and everything below it. `reason` is shown by
    `roam rules` so a user can see why a path is, or is not, synced.
    """

    pattern: str
    scope: Scope
    reason: str = ""
    tier: str = ""


@dataclass(frozen=True)
class ScopeRuleSet:
    """The ordered rules one provider contributes (first match wins inside a set)."""

    provider: str
    rules: tuple[ScopeRule, ...]
    summary: str = ""


@dataclass(frozen=True)
class MergeFormat:
    """A file format merged entry by entry on pull instead of conflicting as a whole file.

    `patterns` are scope-style globs (relative POSIX, `**` allowed) naming the files.
    `merge(base, local, remote, *, overwrite_conflicts=False)` takes the file's bytes as this
    device last synced it (None if never), as it is here and as the remote has it, and returns
    a `roam_core.merge.EntryMerge`, or None when the bytes are not a valid entry list (the
    engine then falls back to whole-file conflict handling; it never guesses).
    """

    name: str
    patterns: tuple[str, ...]
    merge: MergeFunction
    summary: str = ""


@dataclass(frozen=True)
class PluginInfo:
    """One row of `roam plugins list`."""

    name: str
    distribution: str
    version: str
    status: PluginStatus
    summary: str
    kinds: tuple[str, ...] = ()
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "summary": self.summary,
            "kinds": list(self.kinds),
            "error": self.error,
        }


@dataclass(frozen=True)
class Capabilities:
    """What a backend declares about itself; the conformance suite honours it.

    `batched_publish`: objects written with `put_new` become visible to other devices only
    at the next successful `swap_ref` (git makes one commit and one push of packs, snapshot
    and HEAD). The writing instance can always read them back at once.
    `max_object_size`: the largest object the backend accepts, or None for no limit.
    `remote`: calls leave the machine (parallel uploads pay off).
    `deletes`: the backend implements `delete` (prune and key rotation need it; without
    it they refuse with a clear message).
    """

    batched_publish: bool = False
    max_object_size: int | None = None
    remote: bool = False
    deletes: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
