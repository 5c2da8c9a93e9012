"""The shared noise table: a pure function of (seed, size), one file per machine."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from esbench.strategies import noise
from esbench.strategies.noise import NoiseTable, digest_path, noise_table, table_path

_CHECKSUM = (
    "from esbench.strategies.noise import noise_table; import hashlib;"
    "print(hashlib.sha256(noise_table({seed}, {size}).tobytes()).hexdigest())"
)


def _checksum_in_subprocess(seed: int, size: int) -> str:
    code = _CHECKSUM.format(seed=seed, size=size)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_table_is_standard_normal_and_reproducible() -> None:
    t = noise_table(7, 3_000_000)
    assert t.dtype == np.float32 and t.shape == (3_000_000,)
    assert abs(float(t.mean())) < 0.01 and abs(float(t.std()) - 1) < 0.01
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


# --- the digest: a damaged table is rebuilt, never used ------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory and an empty per-process table cache for this test."""
    monkeypatch.setenv("ESBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(noise, "_OPEN", {})
    return tmp_path / "cache"


def _fresh(seed: int, size: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """The table generated from scratch in a cache of its own (then the test's cache again)."""
    old = os.environ["ESBENCH_CACHE"]
    monkeypatch.setenv("ESBENCH_CACHE", str(tmp_path / "reference"))
    monkeypatch.setattr(noise, "_OPEN", {})
    table = np.array(noise_table(seed, size))
    monkeypatch.setenv("ESBENCH_CACHE", old)
    monkeypatch.setattr(noise, "_OPEN", {})
    return table


def _corrupt(path: Path, keep_times: bool = False) -> None:
    """Flip 64 bytes in the middle of the file: same size; optionally mtime and atime put back."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(st.st_size // 2)
        data = f.read(64)
        f.seek(st.st_size // 2)
        f.write(bytes(b ^ 0xFF for b in data))
    if keep_times:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def _damage_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "failed its check" in r.getMessage()]


def test_generation_records_the_sha256_beside_the_table(cache: Path) -> None:
    noise_table(31, 200_000)
    path = table_path(31, 200_000)
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest_path(path).read_text() == f"{expected}  {path.name}\n"  # `sha256sum -c` format
    if shutil.which("sha256sum"):
        subprocess.run(
            ["sha256sum", "--quiet", "-c", digest_path(path).name], cwd=cache / "noise", check=True
        )


def test_damaged_table_is_rebuilt_by_the_next_process(cache: Path) -> None:
    original = hashlib.sha256(noise_table(32, 300_000).tobytes()).hexdigest()
    path = table_path(32, 300_000)
    _corrupt(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() != original
    proc = subprocess.run(
        [sys.executable, "-c", _CHECKSUM.format(seed=32, size=300_000)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == original  # the fresh process got the true table, not the damaged one
    assert hashlib.sha256(path.read_bytes()).hexdigest() == original  # and the file was rebuilt
    assert proc.stderr.count("failed its check") == 1, proc.stderr


def test_a_write_is_caught_even_after_a_verified_stamp_and_with_mtime_put_back(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(noise, "_SETTLE_S", 0.05)
    seed, size = 33, 250_000
    noise_table(seed, size)  # generated: mapped without hashing again
    path = table_path(seed, size)
    while time.time_ns() - path.stat().st_ctime_ns <= 0.05e9:  # past the settle time: the next
        time.sleep(0.01)  # full check is stamped (waits for that condition, no fixed delay)
    monkeypatch.setattr(noise, "_OPEN", {})
    noise_table(seed, size)
    assert (path.parent / (path.name + ".verified")).exists()

    def no_hashing(f: object) -> str:
        raise AssertionError("hashed although the stamp matches the file")

    with monkeypatch.context() as m:  # a process that finds a matching stamp does not hash
        m.setattr(noise, "_OPEN", {})
        m.setattr(noise, "_file_sha256", no_hashing)
        noise_table(seed, size)

    _corrupt(path, keep_times=True)  # same size, same mtime: only ctime moved
    monkeypatch.setattr(noise, "_OPEN", {})
    with caplog.at_level(logging.WARNING, logger="esbench.strategies.noise"):
        rebuilt = np.array(noise_table(seed, size))
    assert len(_damage_warnings(caplog)) == 1
    np.testing.assert_array_equal(rebuilt, _fresh(seed, size, tmp_path, monkeypatch))


@pytest.mark.parametrize("damage", ["digest file missing", "truncated", "digest file garbled"])
def test_a_table_that_cannot_be_checked_is_rebuilt_with_one_warning(
    damage: str,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed, size = 34, 150_000
    noise_table(seed, size)
    path = table_path(seed, size)
    inode = path.stat().st_ino
    if damage == "digest file missing":
        digest_path(path).unlink()
    elif damage == "truncated":
        os.truncate(path, 4 * size - 4)
    else:
        digest_path(path).write_text("not a digest\n")
    monkeypatch.setattr(noise, "_OPEN", {})
    with caplog.at_level(logging.WARNING, logger="esbench.strategies.noise"):
        rebuilt = np.array(noise_table(seed, size))
        monkeypatch.setattr(noise, "_OPEN", {})
        noise_table(seed, size)  # the rebuilt table passes its check: no second warning
    assert len(_damage_warnings(caplog)) == 1
    assert path.stat().st_ino != inode and digest_path(path).exists()
    np.testing.assert_array_equal(rebuilt, _fresh(seed, size, tmp_path, monkeypatch))
