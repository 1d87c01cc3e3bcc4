"""Which paths of a home are shared, local or ignored, decided before anything is read.

The engine calls `load_scope(root, manager, settings)` once per operation and then asks the
model: `classify(rel)` / `explain(rel)` for any relative path, `walk()` for every shared
file, `is_config(rel)` for the files that travel as shared projections, `host_keys` for the
config keys this device keeps, `profiles()` and `optional_items()` for status output.
"""

from __future__ import annotations

from roam_core.scope.model import Entry, Rule, ScopeModel, load_scope, safe_rel

__all__ = ["Entry", "Rule", "ScopeModel", "load_scope", "safe_rel"]
