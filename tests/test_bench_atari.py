"""``esbench bench atari``: the CPU's limit for ES (emulator + batched CNN) and ES's share of it."""

from __future__ import annotations

import math

import pytest

from esbench.bench.atari import bench_atari, cnn_member_step_s, emulator_step_s, es_limit, format_atari_bench
from esbench.runner import load_components


def test_limit_parts_are_measured_and_combined() -> None:
    """(a) seeded-reset episodes through the runtime's preprocessing, (b) the CNN at batch 2; the
    limit is 1 / (a + b) and the ratio c (a + b), in wall-clock and CPU time."""
    load_components()
    emulator = emulator_step_s(max_episode_steps=20, seconds=0.2)
    assert emulator["steps"] == 20 * emulator["episodes"]  # every episode capped, each a seeded reset
    assert 0 < emulator["reset_share"] < 1 and emulator["step_cpu_s"] > 0
    cnn = cnn_member_step_s(batch=2, seconds=0.2)
    assert cnn["batch"] == 2 and cnn["calls"] >= 64 and cnn["member_step_s"] > 0
    limit = es_limit(emulator, cnn, es_steps_per_s=100.0, es_steps_per_cpu_s=120.0)
    a, b = emulator["step_s"], cnn["member_step_s"]
    assert limit["limit_steps_per_s"] == pytest.approx(1.0 / (a + b))
    assert limit["es_over_emulator_plus_cnn"] == pytest.approx(100.0 * (a + b))
    a_cpu, b_cpu = emulator["step_cpu_s"], cnn["member_step_cpu_s"]
    assert limit["es_over_emulator_plus_cnn_cpu"] == pytest.approx(120.0 * (a_cpu + b_cpu))


@pytest.mark.slow
def test_bench_atari_writes_the_ratio_on_a_tiny_run() -> None:
    """A real ES run on a LocalCluster of one worker, tiny: every ratio field is there and finite."""
    load_components()
    result = bench_atari(
        workers=(1,),
        seconds=1.0,
        max_episode_steps=30,
        population_size=4,
        raw_seconds=0.3,
        profile_episodes=2,
        rollout_batch=2,
        limit_seconds=0.3,
        repeats=3,
    )
    for key in ("limit_steps_per_s", "es_over_emulator_plus_cnn", "es_over_emulator_plus_cnn_cpu"):
        assert math.isfinite(result[key]) and result[key] > 0, key
    # Three repeats, each with its own limit; the headline is the median of their ratios.
    ratios = [r["es_over_emulator_plus_cnn"] for r in result["repeats"]]
    assert len(ratios) == 3 and len({r["limit_steps_per_s"] for r in result["repeats"]}) == 3
    assert result["es_over_emulator_plus_cnn"] == pytest.approx(sorted(ratios)[1])
    assert result["es"][0]["es_over_emulator_plus_cnn"] == result["es_over_emulator_plus_cnn"]
    assert result["limit"]["cnn_member_step_s"] == result["cnn"]["member_step_s"]
    assert result["cnn"]["batch"] == 2
    assert "es_over_emulator_plus_cnn" in result["es"][0]
    assert "es_over_emulator_plus_cnn" in format_atari_bench(result)
    assert "median of 3 ES runs" in format_atari_bench(result)


def test_bench_atari_refuses_zero_repeats() -> None:
    with pytest.raises(ValueError, match="repeats=0"):
        bench_atari(repeats=0)
