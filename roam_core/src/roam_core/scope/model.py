"""The scope model: one classification of every path of a root home, and its precedence.

Precedence, highest first (also written in docs/decisions.md, "Scope"):

1. the hard rules: `roam/` and credential files are never shared, whatever anyone says;
2. this device's `roam/rules.yaml`, first matching rule wins;
3. every provider's answer (first match inside each provider's set), the strictest class
   winning, so the order in which plugins are installed never matters;
4. otherwise ignored: the defaults are an allowlist, an unknown path never leaks.

A provider rule whose `tier` names an optional item (`sync_cron`, ...) counts only when this
device's setting of that name is true.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from roam_core.errors import ConfigError
from roam_core.scope.chain import Chain, ChainCache, Rule
from roam_core.scope.patterns import Glob
from roam_core.types import Scope, ScopeRule, ScopeRuleSet

if TYPE_CHECKING:
    from roam_core.manager import PluginManager
    from roam_core.scope.walk import Run

DEFAULT_REASON = "not on the allowlist (unknown paths are never shared)"
UNSAFE_REASON = "not a safe relative path"
#: Optional items every device reports, whether or not a rule names them.
KNOWN_TIERS = ("sync_sessions", "sync_cron")
HOOKS_ITEM = "hooks"
#: A name no real file has, used to ask what a folder rule says about a folder's contents.
_PROBE = "\x00probe"


class FileStat(NamedTuple):
    """What a walk keeps of a file's `lstat`: its type and mode, and the stat signature.

    An `os.stat_result` holds ~20 objects (float times among them), ~600 bytes per file:
    at 100,000 files the walk's largest cost (issue 22). The field names are `stat_result`'s,
    so code reading them takes either.
    """

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_ino: int
    st_ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStat:
        return cls(st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


class Entry(NamedTuple):
    """A shared regular file found by `ScopeModel.walk`; nothing of it has been read.

    A named tuple: a walk makes one per shared file, and a frozen dataclass costs several
    times as much to build.
    """

    rel: str
    location: str  # the absolute path as a string: a `Path` per file costs more than a stat
    stat: FileStat

    @property
    def path(self) -> Path:
        return Path(self.location)


def _compile(rule: ScopeRule, source: str, layer: str, *, active: bool = True,
             ignore_case: bool = False) -> Rule:
    return Rule(rule.pattern, rule.scope, rule.reason, source, layer, rule.tier, active,
                Glob(rule.pattern, ignore_case=ignore_case))


def safe_rel(rel: str) -> bool:
    """Whether `rel` is a plain relative POSIX path (no `..`, `.`, empty or absolute parts)."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


class ScopeModel:
    """Which paths of one root home are shared, local or ignored, and why."""

    def __init__(self, root: Path, hard: Sequence[ScopeRule], user: Sequence[Rule],
                 providers: Sequence[ScopeRuleSet], settings: Mapping[str, Any],
                 host_keys: Sequence[str] = (), rules_file: Path | None = None) -> None:
        self.root = root
        self.settings = dict(settings)
        self.host_keys: tuple[str, ...] = tuple(host_keys)
        self.rules_file = rules_file
        self.skipped: list[tuple[str, str]] = []
        #: the folders the last walk listed, with their lstat before the listing
        self.folders: list[tuple[str, FileStat]] = []
        self._hard = [_compile(rule, "core", "hard", ignore_case=True) for rule in hard]
        self._user = list(user)
        self._providers: list[tuple[str, list[Rule]]] = []
        self._inactive: list[Rule] = []
        tiers = set(KNOWN_TIERS)
        for rule_set in providers:
            compiled: list[Rule] = []
            for rule in rule_set.rules:
                tiers.update([rule.tier] if rule.tier else [])
                active = not rule.tier or _tier_on(self.settings, rule.tier)
                item = _compile(rule, rule_set.provider, "provider", active=active)
                (compiled if active else self._inactive).append(item)
            self._providers.append((rule_set.provider, compiled))
        self._tiers = sorted(tiers)
        self._chain = Chain.at_root(self._hard, self._user,
                                    [rules for _name, rules in self._providers])
        self._chains = ChainCache(self._chain)
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        """A digest of everything the classification depends on besides the path itself."""
        if self._fingerprint is None:  # the rules are fixed for the model's life
            import hashlib

            rules = [[rule.pattern, rule.scope.value, rule.reason, rule.source, rule.layer,
                      rule.tier, rule.active] for rule in self.rules()]
            text = json.dumps([rules, self.host_keys, self._tiers], default=str)
            self._fingerprint = hashlib.sha256(text.encode()).hexdigest()
        return self._fingerprint

    # -- classification ------------------------------------------------------------------

    def classify(self, rel: str) -> Scope:
        """The class of the file at relative POSIX path `rel`; pure, nothing is read."""
        return self.explain(rel)[0]

    def explain(self, rel: str) -> tuple[Scope, str]:
        """The class of `rel` and a human reason naming the rule and who made it."""
        if not safe_rel(rel):
            return Scope.IGNORED, UNSAFE_REASON
        rule = self._chains.decide(rel)
        if rule is None:
            return Scope.IGNORED, DEFAULT_REASON
        return rule.scope, describe(rule)

    def could_share(self, dir_rel: str) -> bool:
        """Whether anything below the folder `dir_rel` could be shared."""
        dir_rel = dir_rel.strip("/")
        if not dir_rel:
            return True
        if not safe_rel(dir_rel):
            return False
        return self._chains.could_share(tuple(dir_rel.split("/")))

    def explain_dir(self, dir_rel: str) -> tuple[Scope, str]:
        """A folder's class: shared when something below it could be, else its folder rule."""
        dir_rel = dir_rel.strip("/")
        if not safe_rel(dir_rel):
            return Scope.IGNORED, UNSAFE_REASON
        rule = self._chains.decide(f"{dir_rel}/{_PROBE}")
        if self.could_share(dir_rel):
            if rule is not None and rule.scope is Scope.SHARED:
                return Scope.SHARED, describe(rule)
            return Scope.SHARED, "holds shared paths"
        return (Scope.IGNORED, DEFAULT_REASON) if rule is None else (rule.scope, describe(rule))

    def is_config(self, rel: str) -> bool:
        """`config.yaml` of the root or of a profile: these travel as shared projections."""
        if not rel.endswith("config.yaml"):
            return False
        parts = rel.split("/")
        return rel == "config.yaml" or (len(parts) == 3 and parts[0] == "profiles"
                                        and parts[2] == "config.yaml" and safe_rel(rel))

    # -- reporting -----------------------------------------------------------------------

    def profiles(self) -> list[tuple[str, bool]]:
        """Each profile folder's name and whether this device excludes it."""
        found: list[tuple[str, bool]] = []
        try:
            with os.scandir(self.root / "profiles") as listing:
                names = sorted(entry.name for entry in listing
                               if entry.is_dir(follow_symlinks=False))
        except OSError:
            return []
        for name in names:
            if _utf8(name):
                found.append((name, not self.could_share(f"profiles/{name}")))
        return found

    def optional_items(self) -> dict[str, bool]:
        """On/off of every optional item on this device (tiers and the hooks opt-in)."""
        items = {tier: _tier_on(self.settings, tier) for tier in self._tiers}
        homes = [""] + [f"profiles/{name}/" for name, _excluded in self.profiles()]
        items[HOOKS_ITEM] = any(self.could_share(f"{home}hooks") for home in homes)
        return items

    def rules(self) -> list[Rule]:
        """Every rule in precedence order: this device's first, then the defaults."""
        provider_rules = [rule for _name, rules in self._providers for rule in rules]
        return [*self._user, *self._hard, *provider_rules, *self._inactive]

    # -- walking -------------------------------------------------------------------------

    def walk(self) -> Iterator[Entry]:
        """Every shared regular file, sorted by `rel`; see `roam_core.scope.walk`."""
        from roam_core.scope.walk import walk_shared

        self.skipped = []
        self.folders = []
        yield from walk_shared(self.root, self._chain, self.skipped, self.folders)

    def walk_runs(self) -> Iterator[Run]:
        """The same files as `walk`, as runs of one folder's: see `walk.walk_runs`."""
        from roam_core.scope.walk import walk_runs

        self.skipped = []
        self.folders = []
        yield from walk_runs(self.root, self._chain, self.skipped, self.folders)


def describe(rule: Rule) -> str:
    """`reason [pattern from source]`, the form `explain` and the CLI print."""
    reason = rule.reason or f"{rule.scope.value} by {rule.source}"
    return f"{reason} [{rule.pattern} from {rule.source}]"


def _tier_on(settings: Mapping[str, Any], tier: str) -> bool:
    value = settings.get(tier, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"setting {tier!r} must be true or false, not {value!r}")
    return value


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_scope(root: Path, manager: PluginManager | None = None,
               settings: Mapping[str, Any] | None = None) -> ScopeModel:
    """The scope model of a root home: hard rules, rules.yaml, built-in and plugin providers.

    `manager` defaults to the process-wide plugin manager; `settings` (for the optional
    tiers) default to the root's own `config.yaml` settings block.
    """
    from roam_core.scope import builtin
    from roam_core.scope.never import hard_rules
    from roam_core.scope.rulesfile import load_rules_file

    if settings is None:
        from roam_core.settings import load_settings

        settings = load_settings(root)
    rules_file = load_rules_file(root)
    user = [_compile(ScopeRule(rule.pattern, rule.scope, "this device's rule"),
                     f"rules.yaml:{rule.line}", "user") for rule in rules_file.rules]
    if manager is None:
        from roam_core.manager import get_manager

        manager = get_manager()
    sets = list(manager.scope_rules(root))
    # the built-in rules are core's: present even if their entry point was disabled
    if builtin.PROVIDER not in {rule_set.provider for rule_set in sets}:
        sets.extend(builtin.rule_sets(root))
    return ScopeModel(root, hard_rules(settings), user, _sorted(sets), settings,
                      host_keys=rules_file.host_keys,
                      rules_file=rules_file.path if rules_file.exists else None)


def _sorted(sets: Iterable[ScopeRuleSet]) -> list[ScopeRuleSet]:
    return sorted(sets, key=lambda rule_set: rule_set.provider)
