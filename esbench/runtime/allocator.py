"""Keep a rollout's large allocations on the heap (glibc), whatever the worker's environment says.

Dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.
pre-spawn-environ``), and a nanny also writes it into its own process's environment, so every
later child of that process inherits it. Setting it turns off glibc's adaptive mmap threshold: every
allocation over 128 kB (each Atari CNN activation, every step) becomes a fresh ``mmap`` whose pages
fault in again, and a freed heap top is handed back at once. An Atari rollout then takes 7x the page
faults it takes in one process, 5-15% of its CPU time (``esbench bench atari``).

A rollout allocates the same buffers every step, so memory handed back is memory the next step takes
again. :func:`keep_large_allocations_on_the_heap` sets the two thresholds to where glibc's adaptive
rule takes them on its own (the mmap threshold grows up to 32 MB on 64-bit, the trim threshold to
twice that), in the worker process itself, so it holds on every cluster kind (a LocalCluster, a
``dask worker`` started by hand, SLURM) and whatever a parent process left in the environment.
"""

from __future__ import annotations

import ctypes
import sys

#: ``mallopt`` parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: the ceiling of its adaptive mmap threshold.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024

_applied: bool | None = None


def keep_large_allocations_on_the_heap() -> bool:
    """Set glibc's mmap threshold to 32 MB and its trim threshold to 64 MB in this process, once.

    Returns:
        True when set (Linux with glibc), False where there is no ``mallopt`` to call (macOS,
        musl): those allocators have no such setting to undo.
    """
    global _applied
    if _applied is None:
        _applied = _mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and _mallopt(
            M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES
        )
    return _applied


def _mallopt(param: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: libc's, no library search
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(param, value))  # glibc returns 1 on success
