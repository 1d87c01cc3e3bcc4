"""Reading and writing config YAML the way Hermes does, and round-tripping it with comments.

Meaning is always PyYAML's (`safe_load`, YAML 1.1), because that is how Hermes reads its
config: `on`, `yes` and `0777` mean what they mean to Hermes. Editing the local file goes
through ruamel.yaml's round-trip mode so comments and key order survive; the result is
checked against the intended meaning, so a formatting quirk can never change a value.
"""

from __future__ import annotations

import io
import re
from typing import Any

from roam_core.errors import ConfigError

_INDENTED_KEY = re.compile(r"^( +)[^\s#-][^:]*:")
_DASH = re.compile(r"^( *)- ")


def _loader() -> Any:
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses duplicate keys, which Hermes would silently collapse."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _value in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "unhashable mapping key", key_node.start_mark) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 construct_mapping)
    return StrictLoader


def yaml_error(error: Exception, source: str) -> ConfigError:
    """A YAML parser's error (PyYAML's or ruamel's) as one line: `source:line: problem`."""
    mark = getattr(error, "problem_mark", None)
    where = f"{source}:{mark.line + 1}" if mark is not None else source
    return ConfigError(f"{where}: {getattr(error, 'problem', None) or 'invalid YAML'}")


def load_mapping(text: str, source: str) -> dict[Any, Any]:
    """Parse config text into plain data; `ConfigError('source:line: problem')` when malformed."""
    import yaml

    try:
        data = yaml.load(text, Loader=_loader())  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise yaml_error(error, source) from None
    except RecursionError:  # PyYAML recurses once per nesting level
        raise ConfigError(f"{source}: nested too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: expected a mapping of settings at the top level")
    _refuse_loops(data, source)
    return data


#: Deeper configs are refused: every later step (projection, merge) walks them recursively.
MAX_DEPTH = 100


def _refuse_loops(data: Any, source: str) -> None:
    """An alias that contains itself (`a: &x [*x]`) would make every later walk endless."""
    stack: list[tuple[Any, frozenset[int]]] = [(data, frozenset())]
    while stack:
        node, above = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if id(node) in above:
            raise ConfigError(f"{source}: a YAML alias refers to itself")
        if len(above) >= MAX_DEPTH:
            raise ConfigError(f"{source}: nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, above | {id(node)}) for child in children)


def dump_plain(data: dict[Any, Any]) -> str:
    """Deterministic block YAML for plain data (no aliases, no line folding)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    if not data:
        return "{}\n"
    text = str(yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                         default_flow_style=False, width=2**20))
    if "\x85" in text:  # PyYAML writes NEL raw in quoted scalars and reads it back as a space
        text = str(yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=False,
                             default_flow_style=False, width=2**20))
    return text


def guess_indent(text: str) -> tuple[int, int]:
    """(mapping indent, dash offset) of a block-YAML text; defaults to PyYAML's (2, 0)."""
    mapping: int | None = None
    offset: int | None = None
    previous_key_indent: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        dash = _DASH.match(line)
        if dash and previous_key_indent is not None and offset is None:
            offset = max(0, len(dash.group(1)) - previous_key_indent)
        elif mapping is None and previous_key_indent is not None \
                and _INDENTED_KEY.match(line) and indent > previous_key_indent:
            mapping = indent - previous_key_indent
        previous_key_indent = indent if stripped.endswith(":") and not dash else None
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def round_trip(text: str) -> tuple[Any, Any]:
    """A ruamel round-trip document of `text` and the YAML instance that dumps it alike."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 2**20
    mapping, offset = guess_indent(text)
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return yaml.load(text), yaml


def dump_round_trip(yaml: Any, document: Any) -> str:
    """The text of an edited round-trip document."""
    stream = io.StringIO()
    yaml.dump(document, stream)
    return stream.getvalue()
