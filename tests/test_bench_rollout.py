"""The rollout breakdown of ``esbench bench``: its replay repeats ES's episodes exactly."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from esbench.bench.rollout import record_generation, replay, rollout_breakdown
from esbench.config.compose import compose_run_config
from esbench.envs import make_env
from esbench.runtime.worker import RunSpec, get_context
from tests.conftest import SMALL


@pytest.mark.parametrize("env", ["halfcheetah", "hopper"])  # continuous + action noise; 10 bins
def test_replaying_recorded_actions_repeats_the_generation(env: str) -> None:
    """Same reset seeds and actions, no policy: the same steps and the same total return, so the
    replay measures the simulator under exactly the load ES put on it."""
    cfg = compose_run_config([f"env={env}", "env.max_episode_steps=120", *SMALL])
    spec = RunSpec.from_config(cfg, run_key=f"test-replay-{env}")
    state = get_context(spec).initial_state()
    result, recorded = record_generation(spec, state)
    assert len(recorded) == result.returns.size == int(cfg.algo.population_size)
    assert sum(len(actions) for _, actions in recorded) == result.lengths.sum()
    _, total = replay(make_env(OmegaConf.create(spec.env), training=True), recorded)
    assert total == pytest.approx(float(result.returns.sum()), rel=1e-9)


def test_rollout_breakdown_measures_a_warmed_up_generation() -> None:
    cfg = compose_run_config(["env=inverted_pendulum", *SMALL])
    out = rollout_breakdown(cfg, warm_generations=2, repeats=1)
    assert out["generation"] == 2
    assert out["episodes"] == int(cfg.algo.population_size)
    assert out["policy_actions_steps_per_s"] > 0 and out["es_rollout_steps_per_s"] > 0
