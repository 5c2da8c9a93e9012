"""The drift between every pair of stage-boundary snapshot rows: hand-computed, written and read
back to the same bits, pooled per layer exactly, and read back by the analysis in place of the
snapshots (or from them, when the table is missing or older than they are)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.drift import pool_blocks
from esbench.analysis.lm_retention import layer_drift_table, layer_group
from esbench.analysis.retention_report import read_snapshot_drift
from esbench.tracking.schema import SNAPSHOT_DRIFT_FILE, SNAPSHOTS_FILE
from esbench.tracking.snapshot_drift import (
    WHOLE_VECTOR,
    SnapshotDrift,
    load_snapshot_drift,
    pairwise_drift,
    write_snapshot_drift,
)
from esbench.training.ruler import write_snapshots
from esbench.utils.layout import Block

#: Three rows over two blocks: [a0, a1 | b0, b1].
PARAMS = np.array([[3.0, 4.0, 1.0, 0.0], [3.0, 4.0, 1.0, 2.0], [0.0, 0.0, 1.0, 2.0]], dtype=np.float32)
LAYOUT = (Block(0, (2,)), Block(2, (2,)))
NAMES = ("model.layers.0.mlp.up_proj.weight", "model.norm.weight")


def test_every_pair_whole_and_per_block_matches_hand_computed_values() -> None:
    table = pairwise_drift(PARAMS, LAYOUT, NAMES)
    pairs = sorted(set(zip(table["from_row"], table["to_row"], strict=True)))
    assert pairs == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]  # a row with itself: zero drift
    drift = SnapshotDrift(table, 3)
    assert drift.whole(0, 1) == {
        "l2": 2.0,
        "rel": 2.0 / math.sqrt(26.0),
        "sparsity@1e-06": 0.75,
        "sparsity@0.0001": 0.75,
    }
    assert drift.whole(2, 2)["l2"] == 0.0 and drift.whole(2, 2)["sparsity@1e-06"] == 1.0
    layers = drift.layers(1, 2).set_index("name")
    assert layers.loc[NAMES[0], "l2"] == 5.0 and layers.loc[NAMES[0], "rel"] == 1.0  # [3,4] -> [0,0]
    assert layers.loc[NAMES[1], "l2"] == 0.0 and layers.loc[NAMES[1], "ref_l2"] == math.sqrt(5.0)
    assert drift.rms(0, 2) == pytest.approx(math.sqrt(25.0 + 4.0) / 2.0)
    assert math.isnan(drift.rms(0, 3))  # a row the run has not reached
    with pytest.raises(ValueError, match="2 block names for 1 layout blocks"):
        pairwise_drift(PARAMS, (Block(0, (4,)),), NAMES)


def test_the_file_round_trips_to_the_same_bits(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    params = rng.standard_normal((3, 10)).astype(np.float32)
    drift = SnapshotDrift.of(params, (Block(0, (4,)), Block(4, (2, 3))), ("w", "v"))
    write_snapshot_drift(tmp_path / SNAPSHOT_DRIFT_FILE, drift)
    back = load_snapshot_drift(tmp_path / SNAPSHOT_DRIFT_FILE)
    assert back.n_rows == 3
    pd.testing.assert_frame_equal(back.table, drift.table, check_exact=True, check_dtype=False)
    (tmp_path / "cut.csv").write_text("from_row,to_row\n0,1\n")
    with pytest.raises(ValueError, match=r"cut\.csv lacks columns"):
        load_snapshot_drift(tmp_path / "cut.csv")


def test_pooled_blocks_are_the_norm_over_the_group() -> None:
    table = pairwise_drift(PARAMS, LAYOUT, NAMES)
    rows = table[(table["from_row"] == 0) & (table["to_row"] == 2) & (table["layer"] != WHOLE_VECTOR)]
    pooled = pool_blocks(rows, ["all", "all"]).iloc[0]
    whole = SnapshotDrift(table, 3).whole(0, 2)
    assert pooled["l2"] == pytest.approx(whole["l2"]) and pooled["rel"] == pytest.approx(whole["rel"])
    assert pooled["sparsity@1e-06"] == pytest.approx(whole["sparsity@1e-06"]) and pooled["size"] == 4


def test_layer_groups_name_transformer_layers_and_the_modules_outside_them() -> None:
    assert layer_group("model.layers.12.self_attn.q_proj.weight") == "layer 12"  # Llama
    assert layer_group("transformer.h.3.attn.c_attn.bias") == "layer 3"  # GPT-2
    assert layer_group("model.embed_tokens.weight") == "embed_tokens"
    assert layer_group("lm_head.weight") == "lm_head"


def test_layer_drift_table_has_t_intervals_over_seeds() -> None:
    per_run = pd.DataFrame(
        {"algo": "grpo", "sequence": "s", "seed": [0, 1, 2], "group": "layer 0", "size": 4,
         "l2": [1.0, 2.0, 3.0], "rel": [0.1, 0.2, 0.3], "sparsity@1e-06": 0.5, "sparsity@0.0001": 0.5}
    )  # fmt: skip
    row = layer_drift_table(per_run, np.random.default_rng(0)).iloc[0]
    half = 4.302652729911275 * 1.0 / math.sqrt(3.0)  # t(0.975, 2) * sd / sqrt(n)
    assert row["l2_mean"] == 2.0 and row["l2_low"] == pytest.approx(2.0 - half) and row["n_seeds"] == 3


def test_the_analysis_reads_the_table_and_falls_back_to_the_snapshots(tmp_path: Path) -> None:
    write_snapshots(tmp_path / SNAPSHOTS_FILE, list(PARAMS), ["a", "b"], [10, 20], LAYOUT, NAMES)
    assert (tmp_path / SNAPSHOT_DRIFT_FILE).is_file()  # the real writer writes both
    drift, why = read_snapshot_drift(tmp_path, 2)
    assert why == "" and drift is not None and drift.whole(0, 2)["l2"] == pytest.approx(math.sqrt(29.0))
    # A table written before the last stage ended (2 rows) is older than the snapshots: not used.
    write_snapshot_drift(tmp_path / SNAPSHOT_DRIFT_FILE, SnapshotDrift.of(PARAMS[:2]))
    drift, why = read_snapshot_drift(tmp_path, 2)
    assert why == "" and drift is not None and drift.n_rows == 3 and len(drift.layers(0, 2)) == 2
    (tmp_path / SNAPSHOTS_FILE).unlink()
    drift, why = read_snapshot_drift(tmp_path, 2)
    assert drift is None and "snapshot_drift.csv is about 2 snapshot rows, expected 3" in why
