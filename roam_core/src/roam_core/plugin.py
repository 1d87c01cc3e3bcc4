"""roam's published plugin API: everything a backend, sink, rule provider or merge format uses.

A plugin distribution imports from this module only (`tests/core/test_plugin_api.py` fails
when one imports anything else from `roam_core`). Names listed in `__all__` keep their meaning
across minor versions of roam-core; a change that breaks one bumps the major version and is
named in the changelog. Everything else in `roam_core` is internal and may change at any time.

The kernel's records, errors and storage contract load with this module; the sink's event
and delivery types, the merge helpers, the plugin manager and the conformance suites (which
need pytest) load on first use, so a backend that imports this module pays for none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from roam_core import deadline
from roam_core.deadline import CONNECT_BUDGET, FLOOR_RATE, Deadline
from roam_core.errors import (
    BackendError,
    ConfigError,
    DeadlineExceeded,
    IntegrityError,
    ObjectExists,
    ObjectNotFound,
    PluginError,
    RefConflict,
    RoamError,
    TransientBackendError,
    UserError,
)
from roam_core.fs import fsync_dir
from roam_core.hookspecs import hookimpl
from roam_core.storage import (
    Backend,
    DoctorCheck,
    DoctorChecks,
    GuardedBackend,
    validate_key,
    validate_ref,
)
from roam_core.types import (
    BackendPlugin,
    Capabilities,
    MergeFormat,
    PluginContext,
    Scope,
    ScopeRule,
    ScopeRuleSet,
    Setting,
    SinkPlugin,
)

if TYPE_CHECKING:
    from roam_core.manager import PluginManager, get_manager
    from roam_core.merge import EntryMerge, merge_entry_lists, merge_json_lines
    from roam_core.mirror.events import TurnEvent, make_live_event
    from roam_core.mirror.sink import (
        Receipt,
        SessionRetry,
        Sink,
        SinkError,
        SinkRejected,
        SinkRetry,
        SinkTerminal,
    )
    from roam_core.mirror.spool import read_json, write_private_json
    from roam_core.testing.contract import BackendContract
    from roam_core.testing.memory import MemoryBackend, MemoryStore
    from roam_core.testing.sink_contract import SinkContract, SinkHarness

#: Names loaded on first use, and the module each comes from.
_LAZY = {
    "PluginManager": "roam_core.manager",
    "get_manager": "roam_core.manager",
    "EntryMerge": "roam_core.merge",
    "merge_entry_lists": "roam_core.merge",
    "merge_json_lines": "roam_core.merge",
    "TurnEvent": "roam_core.mirror.events",
    "make_live_event": "roam_core.mirror.events",
    "Receipt": "roam_core.mirror.sink",
    "SessionRetry": "roam_core.mirror.sink",
    "Sink": "roam_core.mirror.sink",
    "SinkError": "roam_core.mirror.sink",
    "SinkRejected": "roam_core.mirror.sink",
    "SinkRetry": "roam_core.mirror.sink",
    "SinkTerminal": "roam_core.mirror.sink",
    "read_json": "roam_core.mirror.spool",
    "write_private_json": "roam_core.mirror.spool",
    "BackendContract": "roam_core.testing.contract",
    "MemoryBackend": "roam_core.testing.memory",
    "MemoryStore": "roam_core.testing.memory",
    "SinkContract": "roam_core.testing.sink_contract",
    "SinkHarness": "roam_core.testing.sink_contract",
}

__all__ = [
    "CONNECT_BUDGET",
    "FLOOR_RATE",
    "Backend",
    "BackendContract",
    "BackendError",
    "BackendPlugin",
    "Capabilities",
    "ConfigError",
    "Deadline",
    "DeadlineExceeded",
    "DoctorCheck",
    "DoctorChecks",
    "EntryMerge",
    "GuardedBackend",
    "IntegrityError",
    "MemoryBackend",
    "MemoryStore",
    "MergeFormat",
    "ObjectExists",
    "ObjectNotFound",
    "PluginContext",
    "PluginError",
    "PluginManager",
    "Receipt",
    "RefConflict",
    "RoamError",
    "Scope",
    "ScopeRule",
    "ScopeRuleSet",
    "SessionRetry",
    "Setting",
    "Sink",
    "SinkContract",
    "SinkError",
    "SinkHarness",
    "SinkPlugin",
    "SinkRejected",
    "SinkRetry",
    "SinkTerminal",
    "TransientBackendError",
    "TurnEvent",
    "UserError",
    "deadline",
    "fsync_dir",
    "get_manager",
    "hookimpl",
    "make_live_event",
    "merge_entry_lists",
    "merge_json_lines",
    "read_json",
    "validate_key",
    "validate_ref",
    "write_private_json",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
