"""Big buffers go back to the system when freed, not to a heap or a thread's malloc arena.

glibc serves an allocation above its mmap threshold with pages of its own, unmapped on
free, but left to itself it raises that threshold to the largest such buffer freed (up to
32 MiB). After the first pack every pack, sealed blob and read buffer is then carved from
a heap or from the arena of whichever thread asked, and each arena keeps the pages it freed
resident: an S3 pull (eight span readers, whole-pack spans) peaked 25-30% higher with the
threshold moving (issue 22, docs/benchmarks.md). The packer fixes it too, and calls
`release_free_memory` after each pack (it once read every small file into a 4 MiB buffer, a
fresh zeroed mapping each with the threshold fixed; it reads them to size now:
docs/decisions.md). Elsewhere than glibc both calls do nothing.
"""

from __future__ import annotations

import functools

from roam_core import libc

#: Buffers of this size or more get pages of their own, handed back when freed (glibc's
#: `M_MMAP_THRESHOLD`).
MMAP_THRESHOLD = 256 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def release_free_memory() -> None:
    """Hand freed heap pages back to the system (glibc `malloc_trim`; elsewhere nothing).

    Packs are sealed, and spans decoded, in worker threads, each with its own allocator
    arena; without this the pages of what they freed stay resident.
    """
    trim = libc.function("malloc_trim", "c_size_t")
    if trim is not None:
        trim(0)


@functools.cache
def map_large_buffers() -> None:
    """Fix glibc's mmap threshold at `MMAP_THRESHOLD`, once per process (elsewhere nothing)."""
    mallopt = libc.function("mallopt", "c_int", "c_int")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
