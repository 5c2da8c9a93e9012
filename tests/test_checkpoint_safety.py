"""A results directory never runs code: checkpoints are data only, and anything else is refused.

`esbench run` resumes automatically from the checkpoint of a run with the same id, so a results
directory from someone else would run their code if a checkpoint were a pickle. These tests plant a
pickle whose unpickling would create a marker file where the ES and the RL checkpoints belong, run
the real CLI, and check that the run stops with one line and the marker never appears. They also
hold the data-only format to its promise for RL: a resumed SB3 run continues bit for bit.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import pickle
import uuid
import zipfile
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbench.config.compose import compose_run_config
from esbench.runner import default_run_id
from esbench.tracking.schema import CHECKPOINT_FILE, LEGACY_CHECKPOINT_FILE
from esbench.utils import statefile
from esbench.utils.statefile import StateFileError
from tests.conftest import SMALL, esbench

ES_RUN = ["algo=openai_es", "env=inverted_pendulum", "budget=smoke", "budget.timesteps=3000", *SMALL]
RL_RUN = ["algo=dqn", "env=cartpole", "budget=smoke", "budget.timesteps=3000", "tracker=none",
          "tracker.console=false"]  # fmt: skip


class _Payload:
    """Unpickling this creates ``marker``: what a hostile checkpoint would do (any code at all)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _hostile_pickle(marker: Path) -> bytes:
    blob = pickle.dumps(_Payload(marker))
    assert b"system" in blob  # it names os.system: loading it with pickle would run the command
    return blob


def _run_dir(args: list[str], results: Path) -> Path:
    """Where `esbench run ARGS results_dir=RESULTS` keeps its files (the id it would resume)."""
    cfg = compose_run_config([*args, f"results_dir={results}"])
    return results / str(cfg.experiment) / default_run_id(cfg)


# --- the real CLI refuses a planted pickle -------------------------------------------------------


@pytest.mark.parametrize("args", [ES_RUN, RL_RUN], ids=["es", "rl"])
@pytest.mark.parametrize("name", [CHECKPOINT_FILE, LEGACY_CHECKPOINT_FILE])
def test_a_planted_pickle_checkpoint_is_refused_and_never_run(
    tmp_path: Path, args: list[str], name: str
) -> None:
    marker = Path(f"/tmp/esbench-pwned-{uuid.uuid4().hex}")
    run_dir = _run_dir(args, tmp_path)
    run_dir.mkdir(parents=True)
    planted = run_dir / name
    planted.write_bytes(_hostile_pickle(marker))
    try:
        proc = esbench("run", *args, f"results_dir={tmp_path}", check=False, timeout=120)
        assert not marker.exists(), "the planted pickle was unpickled: its code ran"
    finally:
        marker.unlink(missing_ok=True)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("esbench: error:")]
    assert errors == [
        f"esbench: error: checkpoint {planted} is unreadable ({_expected_reason(name)}); "
        "run again with resume=false to start over"
    ], proc.stderr[-3000:]
    assert not (run_dir / "metrics.csv").exists()  # refused before any training step
    assert planted.read_bytes() == _hostile_pickle(marker)  # and left as it was, for inspection


def _expected_reason(name: str) -> str:
    if name == LEGACY_CHECKPOINT_FILE:
        return (
            "a pickle from an older esbench: esbench never unpickles a results directory, "
            "since that can run any code"
        )
    return "it is a pickle, which esbench never loads: unpickling can run any code"


# --- the state-file format ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Inner:
    values: np.ndarray
    count: float = 0.0


@dataclasses.dataclass
class _Outer:
    inner: _Inner
    others: list[_Inner]
    meta: dict[Any, Any]
    extra: tuple[Any, ...] = ()
    derived: int = dataclasses.field(default=0, init=False)


def _sample() -> _Outer:
    shared = np.arange(6, dtype=np.float32).reshape(2, 3)
    outer = _Outer(
        inner=_Inner(shared, math.inf),
        others=[_Inner(shared), _Inner(np.array([1, 2], dtype=np.int64), -math.inf)],
        meta={"nan": math.nan, 3: "int key", (1, "a"): None, "big": 2**100, "flag": True},
        extra=(np.float32(1.5), np.int64(-7), np.bool_(True), b"\x00\xff", deque([1, 2], maxlen=5)),
    )
    outer.extra += (OrderedDict([("b", 1), ("a", 2)]), "text", [1.0, 2.5])
    outer.derived = 11
    return outer


def test_state_file_round_trips_types_values_and_shared_arrays() -> None:
    original = _sample()
    back = statefile.loads(statefile.dumps(original, (_Outer, _Inner)), (_Outer, _Inner))
    assert type(back) is _Outer and type(back.inner) is _Inner and back.derived == 11
    np.testing.assert_array_equal(back.inner.values, original.inner.values)
    assert back.inner.values.dtype == np.float32 and back.inner.count == math.inf
    assert back.others[0].values is back.inner.values  # one array referenced twice stays one
    assert back.others[1].values.dtype == np.int64 and back.others[1].count == -math.inf
    assert math.isnan(back.meta["nan"]) and back.meta[3] == "int key" and back.meta[(1, "a")] is None
    assert back.meta["big"] == 2**100 and back.meta["flag"] is True
    f32, i64, flag, raw, dq, od, text, floats = back.extra
    assert type(f32) is np.float32 and f32 == 1.5 and type(i64) is np.int64 and i64 == -7
    assert type(flag) is np.bool_ and raw == b"\x00\xff"
    assert type(dq) is deque and list(dq) == [1, 2] and dq.maxlen == 5
    assert type(od) is OrderedDict and list(od) == ["b", "a"] and text == "text" and floats == [1.0, 2.5]


def test_state_file_writes_only_data() -> None:
    with pytest.raises(TypeError, match="not among the types"):
        statefile.dumps(_sample(), (_Outer,))  # _Inner not listed
    with pytest.raises(TypeError, match="cannot hold"):
        statefile.dumps({"f": os.system})
    with pytest.raises(TypeError, match="object arrays"):
        statefile.dumps(np.array([object()]))


def test_state_file_rebuilds_only_listed_types() -> None:
    blob = statefile.dumps(_sample(), (_Outer, _Inner))
    with pytest.raises(StateFileError, match="_Inner' is not allowed here"):
        statefile.loads(blob, (_Outer,))


def _with_manifest(blob: bytes, edit: Any) -> bytes:
    """``blob`` with its JSON manifest replaced by ``edit(manifest)`` (a hand-made file)."""
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "__state__.npy":
                arr = np.load(io.BytesIO(data))
                text = json.dumps(edit(json.loads(arr.tobytes().decode()))).encode()
                buf = io.BytesIO()
                np.save(buf, np.frombuffer(text, dtype=np.uint8))
                data = buf.getvalue()
            dst.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("name", ["posix.system", "builtins.eval", "subprocess.Popen", "os.system"])
def test_a_hand_made_state_file_naming_a_callable_is_refused(name: str) -> None:
    blob = statefile.dumps(_Inner(np.zeros(2)), (_Inner,))
    hostile = _with_manifest(blob, lambda m: {**m, "root": {"dataclass": name, "fields": {"command": "id"}}})
    with pytest.raises(StateFileError, match="is not allowed here"):
        statefile.loads(hostile, (_Inner,))


def test_a_field_the_type_does_not_have_is_refused_and_a_missing_one_takes_its_default() -> None:
    blob = statefile.dumps(_Inner(np.zeros(2), 3.0), (_Inner,))

    def add_field(m: dict[str, Any]) -> dict[str, Any]:
        m["root"]["fields"]["__class__"] = "x"
        return m

    with pytest.raises(StateFileError, match="has no field"):
        statefile.loads(_with_manifest(blob, add_field), (_Inner,))

    def drop_count(m: dict[str, Any]) -> dict[str, Any]:
        del m["root"]["fields"]["count"]
        return m

    assert statefile.loads(_with_manifest(blob, drop_count), (_Inner,)).count == 0.0  # an older file


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[: len(b) // 2], "truncated or corrupt archive"),
        (lambda b: b[:10], "truncated or corrupt archive"),
        (lambda b: b"", "not a .npz archive"),
        # Seeded noise, not os.urandom: 1 random file in 256 starts with pickle's 0x80 and is
        # (rightly) refused as a pickle instead.
        (lambda b: np.random.default_rng(1).bytes(len(b)), "not a .npz archive"),
        (lambda b: b[:-30] + bytes(30), "truncated or corrupt archive"),
    ],
    ids=["half", "ten-bytes", "empty", "random", "zeroed-tail"],
)
def test_a_damaged_state_file_raises_one_error_type(damage: Any, reason: str) -> None:
    blob = statefile.dumps(_sample(), (_Outer, _Inner))
    with pytest.raises(StateFileError, match=reason):
        statefile.loads(damage(blob), (_Outer, _Inner))


def test_a_flipped_byte_inside_an_array_is_caught_by_the_archive_checksum() -> None:
    values = np.full(1000, 7.0)
    blob = bytearray(statefile.dumps(_Inner(values), (_Inner,)))
    at = bytes(blob).index(values.tobytes()[:64]) + 100
    blob[at] ^= 0xFF
    with pytest.raises(StateFileError, match="corrupt archive"):
        statefile.loads(bytes(blob), (_Inner,))


# --- RL: a data-only snapshot resumes bit for bit -------------------------------------------------

_TIMING = ("wall_clock_s", "cpu_s", "steps_per_s")
PONG_EVAL = ["eval.interval_timesteps=320", "eval.episodes=1"]


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b) or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize(
    "overrides",
    [
        # DQN: replay buffer, epsilon-greedy draws from the action space's own generator
        ["algo=dqn", "env=cartpole", "budget.timesteps=4000", "eval.interval_timesteps=1000"],
        # TRPO on Ant: VecNormalize statistics, MuJoCo mid-episode (Ant's reward reads body positions,
        # derived quantities that the integration state alone would not restore bit for bit)
        ["algo=trpo", "env=ant", "budget.timesteps=3072", "eval.interval_timesteps=1024", "eval.episodes=1"],
        # A2C on Pong: 16 ALE emulators, frame stacks, no-op resets, RMSprop (TF-like) state
        ["algo=a2c", "env=atari", "env.max_episode_steps=200", "budget.timesteps=960", *PONG_EVAL],
    ],
    ids=["dqn-cartpole", "trpo-ant", "a2c-pong"],
)
def test_a_baseline_resumed_from_a_snapshot_continues_bit_for_bit(overrides: list[str]) -> None:
    from esbench.training.sb3 import train_process
    from esbench.training.sb3_checkpoint import load_snapshot

    cfg = compose_run_config([*overrides, "budget=smoke", "checkpoint_every=1", "tracker=none"])
    rows: list[dict[str, Any]] = []
    snapshots: list[bytes] = []
    straight = train_process(cfg, None, rows.append, snapshots.append)
    assert len(snapshots) >= 2, "the run took too few snapshots to resume from the middle"
    blob = snapshots[len(snapshots) // 2]
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:  # an .npz of plain arrays
        assert all(not archive[k].dtype.hasobject for k in archive.files)
    start = load_snapshot(blob).progress.rows
    assert 0 < start < len(rows)

    resumed_rows: list[dict[str, Any]] = []
    resumed = train_process(cfg, blob, resumed_rows.append, lambda b: None)

    def untimed(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in _TIMING} for r in rs]

    want, got = untimed(rows[start:]), untimed(resumed_rows)
    assert len(got) == len(want)
    for a, b in zip(want, got, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert _equal(a[key], b[key]), (key, a[key], b[key])
    assert resumed["params_sha256"] == straight["params_sha256"]
    assert resumed["total_timesteps"] == straight["total_timesteps"]
