"""Rules in precedence order, narrowed folder by folder, deciding a file from its name.

A `Chain` holds the three layers (hard rules, this device's rules, each provider's rules)
as they stand inside one folder: rules that cannot match anything below it are dropped, and
every remaining rule's folder part is already consumed, so a file directly in the folder is
decided by matching its name against one combined regex per layer. A walk narrows the chain
once per folder; `ScopeModel.classify` narrows to a path's folder through a small cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roam_core.scope.patterns import (
    Glob,
    Relation,
    first_match_regex,
    segment_test,
    segments_regex,
)
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


@dataclass(frozen=True)
class _Live:
    """A rule that can still match inside some folder, with its automaton there."""

    rule: Rule
    states: frozenset[int]
    relation: Relation


Lives = tuple[_Live, ...]


def _start(rules: list[Rule]) -> Lives:
    return _settle([_Live(r, _glob(r).start(), Relation.MAYBE) for r in rules],
                   lambda live: live.states)


def _settle(lives: list[_Live], states_of: Callable[[_Live], frozenset[int]]) -> Lives:
    kept: list[_Live] = []
    for live in lives:
        states = states_of(live)
        relation = _glob(live.rule).relation_at(states) if states else Relation.NONE
        if relation is Relation.NONE:
            continue
        kept.append(_Live(live.rule, states, relation))
        if relation is Relation.COVERS:
            break  # nothing after a covering rule can ever be reached below this folder
    return tuple(kept)


def _descend(lives: Lives, name: str) -> Lives:
    return _settle(list(lives), lambda live: _glob(live.rule).advance(live.states, name))


class _Layer:
    """An ordered rule list answering "which rule matches this name first" in one call."""

    def __init__(self, lives: Lives) -> None:
        self.rules: list[Rule] = []
        sources: list[str] = []
        for live in lives:
            source = _glob(live.rule).name_source(live.states)
            if source is not None:
                self.rules.append(live.rule)
                sources.append(source)
        ignore_case = bool(lives) and all(_glob(live.rule).ignore_case for live in lives)
        self._regex = first_match_regex(tuple(sources), ignore_case) if sources else None

    def first(self, name: str) -> Rule | None:
        if self._regex is None:
            return None
        found = self._regex.match(name)
        return None if found is None else self.rules[int(str(found.lastgroup)[1:])]


def _shareable(lives: Lives) -> bool | None:
    """True: a shared rule may apply; False: a non-shared rule covers all; None: no answer."""
    for live in lives:
        if live.rule.scope is Scope.SHARED:
            return True
        if live.relation is Relation.COVERS:
            return False
    return None


#: File names whose deciding rule a chain remembers.
DECIDED_LIMIT = 4096
#: Subfolder chains remembered per chain; names beyond that many kinds are narrowed afresh.
CHILDREN_LIMIT = 256


class _Names:
    """Which of the live rules' next segments a subfolder name matches: a step's whole input.

    One regex over every segment answers "none" (the usual answer) in one call; only a name
    that matches some segment is tested segment by segment.
    """

    def __init__(self, lives_of_layers: tuple[Lives, ...]) -> None:
        segments: dict[tuple[str, bool], None] = {}
        for lives in lives_of_layers:
            for live in lives:
                glob = _glob(live.rule)
                for state in live.states:
                    segment = glob.segments[state] if state < len(glob.segments) else "**"
                    if segment not in ("**", "*"):  # `*` matches every name: no information
                        segments[(segment, glob.ignore_case)] = None
        self._tests = tuple(segment_test(*key) for key in segments)
        self._none = tuple(False for _ in self._tests)
        self._any = segments_regex(tuple(segments)) if segments else None

    def key(self, name: str) -> tuple[bool, ...]:
        if self._any is None or self._any.match(name) is None:
            return self._none
        return tuple(test(name) for test in self._tests)


class Chain:
    """The rules that can still match inside one folder, in precedence order.

    A step into a subfolder depends on the subfolder's name only through which of the live
    rules' next segments it matches, so the chain remembers its children by that answer:
    the thousands of folders of a large home share a handful of chains, each narrowed once.
    """

    def __init__(self, hard: Lives, user: Lives, providers: tuple[Lives, ...]) -> None:
        self.hard = hard
        self.user = user
        self.providers = providers
        self._layers: list[_Layer] | None = None
        self._provider_layers: list[_Layer] = []
        self._names: _Names | None = None
        self._children: dict[tuple[bool, ...], Chain] = {}
        self._shareable: bool | None = None
        self._decided: dict[str, Rule | None] = {}

    @classmethod
    def at_root(cls, hard: list[Rule], user: list[Rule],
                providers: list[list[Rule]]) -> Chain:
        return cls(_start(hard), _start(user), tuple(_start(rules) for rules in providers))

    def narrow(self, name: str) -> Chain:
        """The chain inside the subfolder `name`: one automaton step for each live rule."""
        if self._names is None:
            self._names = _Names((self.hard, self.user, *self.providers))
        key = self._names.key(name)
        found = self._children.get(key)
        if found is None:
            found = Chain(_descend(self.hard, name), _descend(self.user, name),
                          tuple(_descend(lives, name) for lives in self.providers))
            if len(self._children) < CHILDREN_LIMIT:
                self._children[key] = found
        return found

    def shareable(self) -> bool:
        """Whether anything inside this folder could be shared (False: never enter it)."""
        if self._shareable is None:
            self._shareable = self._could_share()
        return self._shareable

    def _could_share(self) -> bool:
        for lives in (self.hard, self.user):
            answer = _shareable(lives)
            if answer is not None:
                return answer
        answers = [_shareable(lives) for lives in self.providers]
        if False in answers:
            return False  # one provider says non-shared for every path: the strictest wins
        return True in answers

    def decide_name(self, name: str) -> Rule | None:
        """The deciding rule for the file `name` directly in this folder (None: default)."""
        try:
            return self._decided[name]
        except KeyError:
            pass
        found = self._decide(name)
        if len(self._decided) < DECIDED_LIMIT:  # names repeat: SKILL.md in every skill
            self._decided[name] = found
        return found

    def _decide(self, name: str) -> Rule | None:
        if self._layers is None:  # built on first use: many folders only hold folders
            self._layers = [_Layer(self.hard), _Layer(self.user)]
            self._provider_layers = [_Layer(lives) for lives in self.providers if lives]
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


class ChainCache:
    """Chains by folder, each narrowed one step from its parent's; bounded."""

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
        return self.get(folder).shareable()
