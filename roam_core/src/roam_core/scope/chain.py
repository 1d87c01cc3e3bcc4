"""Rules in precedence order, narrowed folder by folder, deciding a file from its name.

A `Chain` holds the three layers (hard rules, this device's rules, each provider's rules)
as they stand inside one folder: rules that cannot match anything below it are dropped, and
every remaining rule's folder part is already consumed, so a file directly in the folder is
decided by matching its name against one combined regex per layer. A walk narrows the chain
once per folder; `ScopeModel.classify` narrows to a path's folder through a small cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roam_core.scope.patterns import Glob, Relation, first_match_regex
from roam_core.types import Scope


@dataclass(frozen=True)
class Rule:
    """A compiled rule with where it came from (`core`, `rules.yaml:LINE` or a provider)."""

    pattern: str
    scope: Scope
    reason: str
    source: str
    layer: str  # "hard", "user" or "provider"
    tier: str = ""
    active: bool = True
    glob: Glob | None = None

    def matches(self, rel: str) -> bool:
        return self.glob is not None and self.glob.matches(rel)

    def as_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "scope": self.scope.value, "source": self.source,
                "layer": self.layer, "reason": self.reason, "tier": self.tier,
                "active": self.active}


def _glob(rule: Rule) -> Glob:
    assert rule.glob is not None
    return rule.glob


class _Layer:
    """An ordered rule list answering "which rule matches this name first" in one call."""

    def __init__(self, rules: list[Rule], folder: tuple[str, ...]) -> None:
        self.rules: list[Rule] = []
        sources: list[str] = []
        for rule in rules:
            source = _glob(rule).name_source(folder)
            if source is not None:
                self.rules.append(rule)
                sources.append(source)
        ignore_case = bool(rules) and all(_glob(rule).ignore_case for rule in rules)
        self._regex = first_match_regex(tuple(sources), ignore_case) if sources else None

    def first(self, name: str) -> Rule | None:
        if self._regex is None:
            return None
        found = self._regex.match(name)
        return None if found is None else self.rules[int(str(found.lastgroup)[1:])]


def _narrow(rules: list[Rule], folder: tuple[str, ...]) -> list[Rule]:
    kept: list[Rule] = []
    for rule in rules:
        relation = _glob(rule).relation(folder)
        if relation is Relation.NONE:
            continue
        kept.append(rule)
        if relation is Relation.COVERS:
            break  # nothing after a covering rule can ever be reached below this folder
    return kept


class Chain:
    """The rules that can still match below `folder`, in precedence order."""

    def __init__(self, hard: list[Rule], user: list[Rule],
                 providers: list[tuple[str, list[Rule]]], folder: tuple[str, ...] = ()) -> None:
        self.hard = hard
        self.user = user
        self.providers = providers
        self.folder = folder
        self._layers: list[_Layer] | None = None
        self._provider_layers: list[_Layer] = []

    def narrow(self, name: str) -> Chain:
        """The chain inside the subfolder `name` of this chain's folder."""
        folder = (*self.folder, name)
        return Chain(_narrow(self.hard, folder), _narrow(self.user, folder),
                     [(provider, _narrow(rules, folder)) for provider, rules in self.providers],
                     folder)

    def decide_name(self, name: str) -> Rule | None:
        """The deciding rule for the file `name` directly in this folder (None: default)."""
        if self._layers is None:  # built on first use: many folders only hold folders
            self._layers = [_Layer(self.hard, self.folder), _Layer(self.user, self.folder)]
            self._provider_layers = [_Layer(rules, self.folder)
                                     for _provider, rules in self.providers if rules]
        for layer in self._layers:
            found = layer.first(name)
            if found is not None:
                return found
        best: Rule | None = None
        for layer in self._provider_layers:
            found = layer.first(name)
            if found is not None and (best is None
                                      or found.scope.strictness > best.scope.strictness):
                best = found
        return best

    def could_share(self, name: str) -> bool:
        """Whether any path below the subfolder `name` could be shared (False: never enter)."""
        folder = (*self.folder, name)
        for rules in (self.hard, self.user):
            for rule in rules:
                relation = _glob(rule).relation(folder)
                if relation is Relation.NONE:
                    continue
                if rule.scope is Scope.SHARED:
                    return True
                if relation is Relation.COVERS:
                    return False
        maybe_shared = False
        for _provider, rules in self.providers:
            for rule in rules:
                relation = _glob(rule).relation(folder)
                if relation is Relation.NONE:
                    continue
                if rule.scope is Scope.SHARED:
                    maybe_shared = True
                    break
                if relation is Relation.COVERS:
                    return False  # this provider says non-shared for every path below
        return maybe_shared


class ChainCache:
    """Chains by folder, narrowed one step from their parent's; bounded."""

    LIMIT = 4096

    def __init__(self, root: Chain) -> None:
        self.root = root
        self._chains: dict[tuple[str, ...], Chain] = {(): root}

    def get(self, folder: tuple[str, ...]) -> Chain:
        found = self._chains.get(folder)
        if found is None:
            found = self.get(folder[:-1]).narrow(folder[-1])
            if len(self._chains) > self.LIMIT:
                self._chains = {(): self.root}
            self._chains[folder] = found
        return found

    def decide(self, rel: str) -> Rule | None:
        *folder, name = rel.split("/")
        return self.get(tuple(folder)).decide_name(name)

    def could_share(self, folder: tuple[str, ...]) -> bool:
        return self.get(folder[:-1]).could_share(folder[-1])
