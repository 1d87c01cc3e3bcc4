"""Optional calls into the C library: looked up once, None where the platform lacks them.

Each is a speed or durability refinement with a plain fallback at its caller (`renameat2`,
`sync_file_range` and `syncfs` are Linux's, `malloc_trim` glibc's). `ctypes` is imported
only when one is first asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


@functools.cache
def function(name: str, *argtypes: str) -> Callable[..., int] | None:
    """The C library's `name` taking `argtypes` (ctypes type names) and returning an int.

    Its calls set `errno`, read with `ctypes.get_errno()`.
    """
    import ctypes

    try:
        found: Any = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    found.argtypes = [getattr(ctypes, kind) for kind in argtypes]
    found.restype = ctypes.c_int
    return found


def errno() -> int:
    """The `errno` of the last call made through `function` in this thread."""
    import ctypes

    return ctypes.get_errno()
