"""JSON read from a store or another device, with its size and nesting bounded.

Everything that arrives through the store is parsed here, so a hostile or damaged document
costs at most `MAX_BYTES` of text and `MAX_DEPTH` levels, and fails as a `ValueError`
(`JSONLimitError`) the callers already handle as "not valid JSON".
"""

from __future__ import annotations

import json
from typing import Any

#: Larger documents are refused before parsing; the store's largest objects (trees of very
#: large folders) stay far below this.
MAX_BYTES = 64 * 1024 * 1024
#: Deeper documents are refused: roam's own records nest a handful of levels.
MAX_DEPTH = 64


_CONTAINERS = (dict, list)


class JSONLimitError(ValueError):
    """A JSON document is too large or nested too deeply."""


def loads(raw: bytes | str, what: str, *, strict: bool = True) -> Any:
    """`json.loads` with `MAX_BYTES` and `MAX_DEPTH` enforced; `ValueError` when refused."""
    if len(raw) > MAX_BYTES:
        raise JSONLimitError(f"{what} is larger than {MAX_BYTES} bytes")
    try:
        value = json.loads(raw, strict=strict)
    except RecursionError:  # the decoder recurses once per level
        raise JSONLimitError(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    # level by level, without a (node, depth) pair per container: a pull walks 60,000 of
    # them in its trees
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        if depth >= MAX_DEPTH:
            raise JSONLimitError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        below: list[Any] = []
        for node in level:
            below += [child for child in (node.values() if type(node) is dict else node)
                      if isinstance(child, _CONTAINERS)]
        level = below
        depth += 1
    return value
