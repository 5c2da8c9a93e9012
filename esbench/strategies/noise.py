"""The shared noise table (Salimans et al. 2017, Sec. 2.1 and the supplement).

Perturbations are slices ``table[offset : offset + dim]`` of one large table of N(0, 1) float32
numbers generated from a seed, so a perturbation is named by an integer offset and workers
exchange offsets and returns, never parameter vectors.

One table per machine: the table is generated once into a file under the cache directory
(``$ESBENCH_CACHE`` or ``~/.cache/esbench``) and every process on the machine maps that file
read-only, so the operating system holds its pages once in the page cache however many worker
processes use it (proportional set size per worker = table / workers). A file lock makes
concurrent first users wait for one generator instead of racing. The table's content depends only
on (seed, size): it is generated in fixed 1M-entry chunks, chunk c from the stream (seed, c).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import numpy as np

_CHUNK = 1 << 20
_OPEN: dict[tuple[int, int], np.ndarray] = {}


def cache_dir() -> Path:
    """Where noise tables live (``$ESBENCH_CACHE``, default ``~/.cache/esbench``)."""
    return Path(os.environ.get("ESBENCH_CACHE", Path.home() / ".cache" / "esbench")) / "noise"


def table_path(seed: int, size: int) -> Path:
    """The file holding the table for (seed, size)."""
    return cache_dir() / f"noise_seed{seed}_n{size}.f32"


def _generate(path: Path, seed: int, size: int) -> None:
    """Write the table to ``path`` (temp file + rename), chunk by chunk to bound memory."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        for c, start in enumerate(range(0, size, _CHUNK)):
            n = min(_CHUNK, size - start)
            rng = np.random.default_rng(np.random.SeedSequence([seed, c]))
            f.write(rng.standard_normal(n, dtype=np.float32).tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def noise_table(seed: int, size: int) -> np.ndarray:
    """The read-only table of ``size`` float32 N(0, 1) numbers for ``seed``, mapped from the
    machine's one copy (generated on first use, under a lock). Cached per process."""
    key = (int(seed), int(size))
    if key in _OPEN:
        return _OPEN[key]
    path = table_path(seed, size)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not (path.exists() and path.stat().st_size == 4 * size):
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not (path.exists() and path.stat().st_size == 4 * size):
                    _generate(path, seed, size)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    table = np.memmap(path, dtype=np.float32, mode="r", shape=(size,))
    _OPEN[key] = table
    return table


class NoiseTable:
    """Slices of the shared table: ``get(offset, dim)`` is perturbation direction epsilon."""

    def __init__(self, seed: int, size: int) -> None:
        self.seed = int(seed)
        self.size = int(size)
        self.table = noise_table(seed, size)

    def get(self, offset: int, dim: int) -> np.ndarray:
        """The perturbation at ``offset``: a read-only view of shape (dim,), float32."""
        return self.table[offset : offset + dim]

    def sample_offsets(self, rng: np.random.Generator, dim: int, n: int) -> np.ndarray:
        """``n`` random offsets at which a slice of length ``dim`` fits, shape (n,), int64."""
        if dim > self.size:
            raise ValueError(
                f"algo.noise_table_size={self.size} is smaller than the policy's {dim} parameters; "
                f"allowed: noise_table_size >= {dim}"
            )
        return rng.integers(0, self.size - dim + 1, size=n, dtype=np.int64)
