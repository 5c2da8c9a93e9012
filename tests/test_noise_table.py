"""The shared noise table: a pure function of (seed, size), one file per machine."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from esbench.strategies.noise import NoiseTable, noise_table, table_path


def _checksum_in_subprocess(seed: int, size: int) -> str:
    code = (
        "from esbench.strategies.noise import noise_table; import hashlib;"
        f"print(hashlib.sha256(noise_table({seed}, {size}).tobytes()).hexdigest())"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_table_is_standard_normal_and_reproducible() -> None:
    t = noise_table(7, 3_000_000)
    assert t.dtype == np.float32 and t.shape == (3_000_000,)
    assert abs(float(t.mean())) < 0.01 and abs(float(t.std()) - 1) < 0.01
    import hashlib

    assert _checksum_in_subprocess(7, 3_000_000) == hashlib.sha256(t.tobytes()).hexdigest()
    assert not np.array_equal(noise_table(8, 3_000_000)[:100], t[:100])


def test_table_is_generated_once_and_mapped_read_only() -> None:
    noise_table(11, 100_000)
    path = table_path(11, 100_000)
    inode = path.stat().st_ino
    _checksum_in_subprocess(11, 100_000)  # another process maps the same file
    assert path.stat().st_ino == inode
    t = NoiseTable(11, 100_000)
    assert not t.get(5, 10).flags.writeable


def test_offsets_fit_and_too_small_table_is_an_error() -> None:
    t = NoiseTable(11, 100_000)
    offs = t.sample_offsets(np.random.default_rng(0), 1000, 500)
    assert offs.min() >= 0 and offs.max() <= 100_000 - 1000
    try:
        t.sample_offsets(np.random.default_rng(0), 200_000, 1)
    except ValueError as e:
        assert "noise_table_size" in str(e)
    else:
        raise AssertionError("expected ValueError")
