"""W&B with the real client: online with no network, and several sweep jobs in one worker process.

No fake ``wandb`` module: online runs talk to a closed port on 127.0.0.1 (the connection is
refused), to a server on 127.0.0.1 that accepts and never answers, and to a host in the reserved
``.invalid`` domain (no name server gives it an address); no connection leaves the machine. Offline
runs are checked by reading their ``.wandb`` files back with wandb's own protobuf schema
(:func:`wandb_records`).
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from wandb.proto import wandb_internal_pb2

from esbench.tracking.schema import METRIC_COLUMNS, SUMMARY_KEYS
from tests.conftest import SMALL, esbench, only_run_dir, read_run

CARTPOLE = ["env=cartpole", "budget=smoke", "budget.timesteps=3000"]
SWEEP = ["env=cartpole", "budget=smoke", "budget.timesteps=10000"]
NOISE = "algo.noise_table_size=1000000"  # in SMALL too

# The .wandb file: a 7-byte header (":W&B", magic 0xBEE1, version), then LevelDB log records in
# 32 KiB blocks, each record a 7-byte header (crc32 of type + data, length, type) and a serialized
# wandb_internal.Record; a record too long for its block is split FIRST, MIDDLE..., LAST.
_BLOCK, _HEADER = 32768, 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def wandb_records(path: Path) -> Iterator[wandb_internal_pb2.Record]:
    """Every record of an offline run's ``.wandb`` file, checksums verified."""
    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:_HEADER])
    assert (ident, magic) == (b":W&B", 0xBEE1), f"{path} is not a .wandb file"
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # a block's trailer: zero padding
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if kind == 0 and length == 0:
            break
        chunk = data[pos + _HEADER : pos + _HEADER + length]
        assert zlib.crc32(bytes([kind]) + chunk) == crc, f"{path}: bad checksum at byte {pos}"
        pos += _HEADER + length
        if kind in (_FIRST, _MIDDLE):
            pending = (b"" if kind == _FIRST else pending) + chunk
            continue
        record = wandb_internal_pb2.Record()
        record.ParseFromString(pending + chunk if kind == _LAST else chunk)
        pending = b""
        yield record


def finished_wandb_records(path: Path, timeout_s: float = 30) -> list[wandb_internal_pb2.Record]:
    """Every record of a finished offline run's ``.wandb`` file, once its exit record is there: wandb's
    service writes the file in the background, so right after ``run.finish`` in this process its
    last records may still be on their way (a run in a CLI subprocess is complete when it exits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = list(wandb_records(path))
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def offline_run(run_dir: Path) -> tuple[list[dict[str, object]], int | None]:
    """(history rows, exit code or None) of the one offline W&B run in ``run_dir/wandb``."""
    files = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1, files
    rows: list[dict[str, object]] = []
    exit_code = None
    for record in wandb_records(files[0]):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = record.history.item  # wandb-core names a key by nested_key, the Python SDK by key
            rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in items})
        elif kind == "exit":
            exit_code = record.exit.exit_code
    return rows, exit_code


@contextmanager
def _refused() -> Iterator[str]:
    """An http URL on 127.0.0.1 whose port is bound but not listening: every connect is refused
    at once, and no other process can take the port while the test runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@contextmanager
def _black_hole() -> Iterator[str]:
    """An http URL on 127.0.0.1 (loopback only) whose server accepts every connection and never
    answers: what a client sees behind a firewall that drops replies or a hung proxy."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # kept open, never read, never written
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()


@contextmanager
def _unresolvable() -> Iterator[str]:
    """An http URL whose host cannot resolve: ``.invalid`` is reserved for that (RFC 2606)."""
    yield "http://api.esbench-no-such-host.invalid"


ENDPOINTS = {"refused": _refused, "black-hole": _black_hole, "dns-failure": _unresolvable}


@pytest.fixture(scope="module")
def offline_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """(run directory, seconds the CLI took) of the run below without W&B: the reference."""
    root = tmp_path_factory.mktemp("no-wandb")
    started = time.monotonic()
    esbench("run", *CARTPOLE, *SMALL, f"results_dir={root}")
    return only_run_dir(root), time.monotonic() - started


@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS))
def test_online_without_network_goes_on_after_the_init_timeout(
    endpoint: str, tmp_path: Path, offline_reference: tuple[Path, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A W&B server that refuses, never answers, or cannot be resolved: wandb's default would wait
    90 s; the run waits about tracker.init_timeout_s, warns once, and its results store is the one a
    run without W&B writes."""
    reference_dir, reference_s = offline_reference
    monkeypatch.delenv("WANDB_MODE")  # conftest keeps W&B offline; these tests are the exception
    monkeypatch.setenv("WANDB_API_KEY", "esbench-test-" + "0" * 40)
    timeout_s = 3
    online = ["tracker=wandb_online", f"tracker.init_timeout_s={timeout_s}", "tracker.console=false"]
    with ENDPOINTS[endpoint]() as url:
        monkeypatch.setenv("WANDB_BASE_URL", url)
        started = time.monotonic()
        proc = esbench("run", *CARTPOLE, NOISE, *online, f"results_dir={tmp_path / 'online'}", timeout=240)
        extra_s = time.monotonic() - started - reference_s
    # What W&B added to the run, against the same run without it: far below wandb's own 90 s.
    assert extra_s < 60, extra_s
    warnings = [line for line in proc.stderr.splitlines() if "W&B" in line or "wandb" in line.lower()]
    assert len(warnings) == 1, proc.stderr
    assert "W&B tracking disabled for this run" in warnings[0]
    if endpoint == "black-hole":  # nothing came back: the run says it stopped waiting, and why
        assert f"tracker.init_timeout_s={timeout_s} s" in warnings[0]

    run_dir = only_run_dir(tmp_path / "online")
    assert list(pd.read_csv(run_dir / "metrics.csv").columns) == list(METRIC_COLUMNS)
    metrics, summary = read_run(run_dir)
    reference, ref_summary = read_run(reference_dir)
    assert len(metrics) >= 2 and summary["status"] == "complete"
    assert set(SUMMARY_KEYS) <= set(summary)
    pd.testing.assert_frame_equal(metrics, reference)
    assert summary["params_sha256"] == ref_summary["params_sha256"]


def test_init_timeout_must_be_positive() -> None:
    proc = esbench("run", *CARTPOLE, *SMALL, "tracker.init_timeout_s=0", check=False)
    assert proc.returncode == 2
    assert "tracker.init_timeout_s=0" in proc.stderr and "> 0" in proc.stderr


def test_sweep_jobs_sharing_a_worker_each_keep_every_row_in_their_own_wandb_run(tmp_path: Path) -> None:
    """2 jobs on 1 single-threaded worker run at once in the same worker process (the second starts
    when the first secedes into its run, so the overlap is structural, not a race). Each job's
    offline W&B run holds every row its metrics.csv holds, and finished cleanly: one job starting
    W&B must not finish another's run."""
    proc = esbench(
        "run", "-m", "hydra/launcher=dask", *SWEEP, NOISE,
        "tracker.console=false", "cluster.n_workers=1", "hydra.launcher.max_concurrent=2", "seed=0,1",
        f"results_dir={tmp_path}", timeout=240,
    )  # fmt: skip
    match = re.search(r"sweep finished: 2/2 done, up to (\d+) job\(s\) ran at once", proc.stdout)
    assert match, proc.stdout[-2000:]
    assert int(match.group(1)) == 2  # both jobs' W&B runs were live in one process at once
    assert "W&B tracking disabled" not in proc.stdout + proc.stderr
    run_dirs = sorted(p.parent for p in tmp_path.rglob("summary.json"))
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        rows, exit_code = offline_run(run_dir)
        expected = pd.read_csv(run_dir / "metrics.csv")["timesteps"].tolist()
        assert [row["timesteps"] for row in rows] == expected, run_dir.name
        assert exit_code == 0, run_dir.name
        (wandb_file,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
        records = wandb_records(wandb_file)
        artifacts = [r.artifact for r in records if r.WhichOneof("record_type") == "artifact"]
        assert [a.name for a in artifacts] == [f"run-{run_dir.name}"]  # its own results, not another job's
        assert {Path(e.local_path).parent for e in artifacts[0].manifest.contents} == {run_dir}
