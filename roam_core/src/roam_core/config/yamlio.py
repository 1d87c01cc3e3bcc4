"""Reading and writing config YAML the way Hermes does, and round-tripping it with comments.

Meaning is always PyYAML's (`safe_load`, YAML 1.1), because that is how Hermes reads its
config: `on`, `yes` and `0777` mean what they mean to Hermes. Editing the local file goes
through ruamel.yaml's round-trip mode so comments and key order survive; the result is
checked against the intended meaning, so a formatting quirk can never change a value.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from roam_core.errors import ConfigError

_INDENTED_KEY = re.compile(r"^( +)[^\s#-][^:]*:")
_DASH = re.compile(r"^( *)- ")


#: At most this many aliases (`*name`) in one document; real configs use a handful.
MAX_ALIASES = 256
#: Expansion allowed beyond the text's own length, in nodes plus scalar characters with every
#: alias counted in full: aliases may save typing, never multiply a document (alias bombs).
EXPANSION_ALLOWANCE = 64 * 1024
#: Deeper documents are refused: every later step (projection, merge) walks them recursively.
MAX_DEPTH = 100


@dataclass(frozen=True)
class AliasUse:
    """Where a document shares a node: an alias (`*name`, `<<: *name`) or the anchor it names."""

    path: tuple[str, ...]
    line: int


def _loader(strict: bool) -> Any:
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        """SafeLoader that counts aliases while composing, so a bomb stops early."""

        aliases = 0
        source = "YAML"
        aliases_allowed = True

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                where = f"{self.source}:{self.peek_event().start_mark.line + 1}"
                if not self.aliases_allowed:
                    raise ConfigError(f"{where}: YAML aliases are not accepted here")
                if self.aliases > MAX_ALIASES:
                    raise ConfigError(f"{where}: more than {MAX_ALIASES} YAML aliases; "
                                      "refused (write the values out)")
            return super().compose_node(parent, index)

    if not strict:
        return BoundedLoader

    class StrictLoader(BoundedLoader):
        """Also refuses duplicate keys, which Hermes would silently collapse."""

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


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_expansion(root: Any, limit: int, source: str) -> None:
    """Refuse loops and documents that expand past `limit`, in time linear in the nodes.

    Sizes are memoised per node, so a shared node is measured once however often it is used.
    """
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        here = id(node)
        if finished:
            open_nodes.discard(here)
            size = 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else
                        sum(sizes[id(child)] for child in _children(node)))
            if size > limit:
                raise ConfigError(f"{source}: YAML aliases expand it past {limit} nodes and "
                                  "characters; refused (write the values out)")
            sizes[here] = size
        elif here in open_nodes:  # met again on its own path: the alias contains itself
            raise ConfigError(f"{source}: a YAML alias refers to itself")
        elif here not in sizes:
            open_nodes.add(here)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


def _alias_uses(root: Any) -> list[AliasUse]:
    """Every key path where a node is met a second time (the alias) and where it was first."""
    import yaml

    first: dict[int, AliasUse] = {}
    uses: list[AliasUse] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        use = AliasUse(path, int(node.start_mark.line) + 1)
        if id(node) in first:
            uses += [first[id(node)], use]
            continue
        first[id(node)] = use
        if isinstance(node, yaml.MappingNode):
            stack.extend((value, (*path, str(getattr(key, "value", key))))
                         for key, value in node.value)
        # a list travels whole, so an alias inside one is placed at the list's path
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, path) for item in node.value)
    return uses


def load_document(text: str, source: str, *, strict: bool = True, aliases: bool = True
                  ) -> tuple[Any, list[AliasUse]]:
    """Parse YAML with alias expansion bounded; the data and where it uses aliases.

    `ConfigError('source[:line]: problem')` for malformed text, alias bombs (more than
    `MAX_ALIASES`, or expanding past the text's length plus `EXPANSION_ALLOWANCE`), aliases
    that contain themselves, nesting deeper than `MAX_DEPTH`, and any alias when `aliases`
    is false.
    """
    with _parsing(source):
        loader = _loader(strict)(text)  # reads the stream's start: may raise already
        loader.source, loader.aliases_allowed = source, aliases
        try:
            node = _compose(loader, text, source)
            if node is None:
                return None, []
            uses = _alias_uses(node) if loader.aliases else []
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    _refuse_deep(data, source)
    return data, uses


def compose(text: str, source: str) -> Any:
    """The node graph of a YAML text (aliases not expanded), bounded like `load_document`."""
    with _parsing(source):
        loader = _loader(False)(text)
        loader.source = source
        try:
            return _compose(loader, text, source)
        finally:
            loader.dispose()


def _compose(loader: Any, text: str, source: str) -> Any:
    node = loader.get_single_node()
    if node is not None:
        _check_expansion(node, len(text) + EXPANSION_ALLOWANCE, source)
    return node


@contextmanager
def _parsing(source: str) -> Iterator[None]:
    """PyYAML's errors as one line naming `source`."""
    import yaml

    try:
        yield
    except yaml.YAMLError as error:
        raise yaml_error(error, source) from None
    except RecursionError:  # PyYAML recurses once per nesting level
        raise ConfigError(f"{source}: nested too deeply") from None


def safe_load(text: str, source: str) -> Any:
    """`yaml.safe_load` with alias expansion and nesting bounded (see `load_document`)."""
    return load_document(text, source, strict=False)[0]


def load_mapping(text: str, source: str, *, aliases: bool = True) -> dict[Any, Any]:
    """Parse config text into plain data; `ConfigError('source:line: problem')` when malformed."""
    data, _uses = load_document(text, source, aliases=aliases)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: expected a mapping of settings at the top level")
    return data


def _refuse_deep(data: Any, source: str) -> None:
    """Walks are recursive later on; loops were refused while composing."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth >= MAX_DEPTH:
            raise ConfigError(f"{source}: nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)


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
