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

A damaged table is never used. Generation writes the table's sha256 beside it
(``<table>.sha256``, in ``sha256sum`` format, written atomically after the table), and each
process checks the file before it first maps it: a table whose size or digest is wrong, or whose
digest file is missing, is rebuilt under the lock with one warning. Hashing costs about 0.05 s for
the default 25M-entry table (100 MB) and 0.5 s for the paper's 250M (1 GB) on this machine
(sha256 with SHA-NI, 1.9 GB/s from the page cache; more when the file must come from disk), and
every worker process would pay it at start. So a full check is recorded in a stamp file
(``<table>.verified``: the digest and the file's device, inode, size, mtime and ctime); a process
that finds the stamp matching the file's ``fstat`` skips the hash, and its check costs a ``stat``
and two small reads. Any write to the file moves its ctime, which no user can set back, so a
modified table no longer matches the stamp and is hashed again. The stamp is written only once
the file's ctime is ``_SETTLE_S`` old: file times come from a coarse kernel clock (a few ms), and
a write within the same tick as the last change would otherwise leave ctime unchanged. What the
stamp cannot see is damage below the file system (bit rot on disk): for that, ``sha256sum -c``
in the cache directory, or deleting the ``.verified`` files, forces a full check.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_SETTLE_S = 2.0  # a file's ctime must be this old before a full check is stamped (see above)
_OPEN: dict[tuple[int, int], np.ndarray] = {}


def cache_dir() -> Path:
    """Where noise tables live (``$ESBENCH_CACHE``, default ``~/.cache/esbench``)."""
    return Path(os.environ.get("ESBENCH_CACHE", Path.home() / ".cache" / "esbench")) / "noise"


def table_path(seed: int, size: int) -> Path:
    """The file holding the table for (seed, size)."""
    return cache_dir() / f"noise_seed{seed}_n{size}.f32"


def digest_path(path: Path) -> Path:
    """The table's sha256, one ``sha256sum`` line: ``<hex>  <file name>``."""
    return path.with_name(path.name + ".sha256")


def _stamp_path(path: Path) -> Path:
    """The record of the last full check of the table on this machine."""
    return path.with_name(path.name + ".verified")


def _generate(path: Path, seed: int, size: int) -> None:
    """Write the table to ``path`` (temp file + rename), chunk by chunk to bound memory, hashing it
    as it is written; then its digest file (atomically). A crash between the two leaves a table
    without a matching digest, which the next user rebuilds."""
    _stamp_path(path).unlink(missing_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    h = hashlib.sha256()
    with open(tmp, "wb") as f:
        for c, start in enumerate(range(0, size, _CHUNK)):
            n = min(_CHUNK, size - start)
            rng = np.random.default_rng(np.random.SeedSequence([seed, c]))
            data = rng.standard_normal(n, dtype=np.float32).tobytes()
            h.update(data)
            f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _write_small(digest_path(path), f"{h.hexdigest()}  {path.name}\n")


def _write_small(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file, fsync, rename), with the table's permissions: the
    umask decides, as for the table, so a cache shared between users stays readable to them."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _recorded_digest(path: Path) -> str | None:
    """The sha256 recorded at generation, or None if the digest file is missing or unreadable."""
    try:
        digest, _, name = digest_path(path).read_text().strip().partition("  ")
    except (OSError, UnicodeDecodeError):
        return None
    if name != path.name or len(digest) != 64:
        return None
    return digest


def _file_sha256(f: io.BufferedReader) -> str:
    """sha256 of an open file's whole content (read from the start)."""
    f.seek(0)
    h = hashlib.sha256()
    buf = bytearray(_CHUNK * 4)
    view = memoryview(buf)
    while n := f.readinto(view):
        h.update(view[:n])
    return h.hexdigest()


def _identity(st: os.stat_result) -> list[int]:
    """What changes whenever the file is replaced or written: device, inode, size, mtime, ctime."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _problem(f: io.BufferedReader, path: Path, size: int) -> str | None:
    """Why the open table file ``f`` must not be used, or None if it is the table its digest file
    describes (checked by hash, or by a stamp of an earlier full check of this very file)."""
    st = os.fstat(f.fileno())
    if st.st_size != 4 * size:
        return f"it has {st.st_size} bytes, not {4 * size}"
    expected = _recorded_digest(path)
    if expected is None:
        return f"its digest file {digest_path(path).name} is missing"
    stamp = {"sha256": expected, "file": _identity(st)}
    try:
        if json.loads(_stamp_path(path).read_text()) == stamp:
            return None
    except (OSError, ValueError):
        pass
    if _file_sha256(f) != expected:
        return "its content does not match its recorded sha256"
    if time.time_ns() - st.st_ctime_ns > _SETTLE_S * 1e9:
        with contextlib.suppress(OSError):  # a read-only cache only costs the next process a hash
            _write_small(_stamp_path(path), json.dumps(stamp))
    return None


def _open_checked(path: Path, size: int) -> tuple[np.ndarray | None, str]:
    """(the table mapped read-only, "") if the file passes its check, else (None, why not). The map
    is made from the same open file that was checked, so a concurrent rebuild cannot slip in."""
    try:
        with open(path, "rb") as f:
            problem = _problem(f, path, size)
            if problem is not None:
                return None, problem
            return np.memmap(f, dtype=np.float32, mode="r", shape=(size,)), ""
    except FileNotFoundError:
        return None, "missing"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The machine-wide lock for generating ``path``."""
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def noise_table(seed: int, size: int) -> np.ndarray:
    """The read-only table of ``size`` float32 N(0, 1) numbers for ``seed``, mapped from the
    machine's one copy: generated on first use, checked once per process before it is mapped, and
    rebuilt (with one warning) when damaged, all under a lock. Cached per process."""
    key = (int(seed), int(size))
    if key in _OPEN:
        return _OPEN[key]
    path = table_path(seed, size)
    path.parent.mkdir(parents=True, exist_ok=True)
    table, problem = _open_checked(path, size)
    if table is None:
        with _locked(path):
            table, problem = _open_checked(path, size)  # another process may have rebuilt it
            if table is None:
                if problem != "missing":
                    log.warning(
                        "noise table %s failed its check (%s); rebuilding it from seed %d",
                        path,
                        problem,
                        seed,
                    )
                _generate(path, seed, size)
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
