"""Fuzzing the text decoders: rules.yaml, config.yaml merge inputs, memory files, paths.

rules.yaml and config.yaml are written by people (and config projections arrive from other
devices); memory files are merged from both sides. Random text, YAML built from random data,
and YAML's sharp edges (aliases, loops, tags, deep nesting) must give a result or a
`RoamError` naming the file, never a traceback. Accepted manifest paths must stay inside the
home, and a pull of a hostile store writes nothing outside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roam_core.config import merge_config, shared_projection
from roam_core.errors import ConfigError, IntegrityError, RoamError
from roam_core.merge import merge_memory
from roam_core.scope.rulesfile import parse_rules
from roam_core.store.manifest import check_path

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

EDGES = ["a: &x [*x]\n", "a: &x {b: *x}\n", "[" * 1100 + "]" * 1100,
         "a: " + "{b: " * 1100 + "1" + "}" * 1100, "!!python/object:os.system {}\n",
         "a: !!binary AAAA\n", "a: 2001-12-14\n", "{? [1]: 2}\n", "a: 1e400\n", "a: .nan\n",
         "*x\n", "a: &a x\nb: *a\n", "a: 1\na: 2\n", "- 1\n", "shared: [*x]\n", "\x00",
         "shared:\n  - skills/\nlocal: skills/\n", "host_keys: [..]\n", "\ufeffa: 1\n",
         "<<: {a: 1}\n", "a: {<<: [*x]}\n", "? !!set {a, b}\n", "%YAML 1.3\n---\na: 1\n"]
yaml_chars = st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#?,.%@ \n\t\\0123xy§")),
                     max_size=80)
keys = st.text(min_size=1, max_size=8) | st.sampled_from(
    ["model", "api_key", "terminal", "display", "interface", "paths", "plugins", "token"])
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
           | st.sampled_from(["/home/u/x", "~/y", "sk-" + "A" * 30, "on", "0777"]))
mappings = st.recursive(st.dictionaries(keys, scalars, max_size=4),
                        lambda inner: st.dictionaries(keys, inner | st.lists(inner | scalars,
                                                                              max_size=3),
                                                      max_size=4), max_leaves=15)
yaml_docs = mappings.map(lambda data: yaml.safe_dump(data, sort_keys=False))
texts = yaml_docs | yaml_chars | st.sampled_from(EDGES) | st.text(max_size=60)


def _roam_only(func: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return func(*args, **kwargs)
    except RoamError:
        return None


@pytest.mark.parametrize("text", EDGES)
def test_yaml_edges(text: str) -> None:
    _roam_only(parse_rules, text, "rules.yaml")
    _roam_only(shared_projection, text)
    _roam_only(merge_config, text, text, text)
    _roam_only(merge_config, "model: m\n", None, text)
    _roam_only(merge_config, text, None, "model: m\n", overwrite_conflicts=True)


@FUZZ
@given(texts)
def test_rules_file(text: str) -> None:
    try:
        rules = parse_rules(text, "rules.yaml")
    except ConfigError as error:
        assert str(error).startswith("rules.yaml"), error
        return
    for rule in rules.rules:
        assert rule.pattern and not rule.pattern.startswith("roam/")


@settings(FUZZ, max_examples=100)
@given(texts, texts | st.none(), texts, st.booleans(), st.lists(keys, max_size=2))
def test_config_merge_inputs(local: str, base: str | None, remote: str, overwrite: bool,
                             host_keys: list[str]) -> None:
    projection = _roam_only(shared_projection, local, host_keys=tuple(host_keys))
    if projection is not None:
        # what travels is itself valid input to the other side's merge
        assert _roam_only(shared_projection, projection) == projection
    merged = _roam_only(merge_config, local, base, remote, overwrite_conflicts=overwrite,
                        host_keys=tuple(host_keys))
    if merged is not None and merged.changed:
        assert isinstance(merged.text, str)
        yaml.safe_load(merged.text)  # the merged file is YAML Hermes can read


entries = st.lists(st.text(max_size=30), max_size=5).map("\n§\n".join)


@FUZZ
@given(st.none() | entries | st.binary(max_size=40), entries | st.binary(max_size=40),
       entries | st.binary(max_size=40), st.booleans())
def test_memory_merge_inputs(base: Any, local: Any, remote: Any, overwrite: bool) -> None:
    as_bytes = [v.encode() if isinstance(v, str) else v for v in (base, local, remote)]
    merged = merge_memory(*as_bytes, overwrite_conflicts=overwrite)
    assert merged is None or isinstance(merged.data, bytes)


@FUZZ
@given(st.text(max_size=40) | st.lists(st.sampled_from(["..", ".", "", "a", "b", "/", "\\",
                                                         "\x00", "~", "c:", "\u202e"]),
                                      max_size=6).map("/".join))
def test_accepted_manifest_paths_stay_inside_the_home(path: str) -> None:
    try:
        check_path(path)
    except IntegrityError:
        return
    root = Path("/home-under-test")
    resolved = Path(os.path.normpath(root / path))
    assert resolved != root and root in resolved.parents, path
