"""A write that fails half-way leaves the file as it was: every results-store file is written
atomically (a temporary file beside it, then a rename), so a crash cannot leave half a checkpoint.

The failure is real and deterministic: the write runs in a child process whose file-size limit
(``RLIMIT_FSIZE``) is below the new content's size, so the kernel refuses the write part-way
(``EFBIG``), as a full disk would. A write straight into the target would leave it truncated.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

OLD = b"old complete content\n" * 100
LIMIT = 64 * 1024  #: bytes the child may write to any one file
NEW = b"x" * (4 * LIMIT)  #: bigger than the limit: the write fails part-way

WRITE_UNDER_A_SIZE_LIMIT = f"""
import resource, signal, sys
from esbench.utils.io import atomic_write_bytes
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the over-limit write fails with EFBIG, not a signal
resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
try:
    atomic_write_bytes(sys.argv[1], b"x" * {len(NEW)})
except OSError as e:
    print(f"write failed: {{e}}")
    sys.exit(3)
"""


@pytest.mark.parametrize("existing", [True, False], ids=["over-an-old-file", "new-file"])
def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, existing: bool
) -> None:
    target = tmp_path / "checkpoint.npz"
    if existing:
        target.write_bytes(OLD)
    proc = subprocess.run(
        [sys.executable, "-c", WRITE_UNDER_A_SIZE_LIMIT, str(target)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3 and "write failed" in proc.stdout, proc.stdout + proc.stderr
    if existing:
        assert target.read_bytes() == OLD, "a failed write changed the file it was replacing"
    else:
        assert not target.exists(), "a failed write left a partial file"
    assert sorted(p.name for p in tmp_path.iterdir()) == (["checkpoint.npz"] if existing else [])
