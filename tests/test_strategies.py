"""Strategies on synthetic objectives: shaping, optimizer, convergence, NaN exclusion."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.config.schema import OpenAIESConfig
from esbench.strategies import STRATEGIES, make_strategy
from esbench.strategies.shaping import centered_ranks


def algo_cfg(**overrides):
    cfg = OmegaConf.structured(OpenAIESConfig)
    cfg.noise_table_size = 200_000
    for k, v in overrides.items():
        cfg[k] = v
    return cfg


def test_centered_ranks_known_answer() -> None:
    x = np.array([[3.0, -1.0], [10.0, 0.5]])
    np.testing.assert_allclose(centered_ranks(x), [[1 / 6, -0.5], [0.5, -1 / 6]], rtol=1e-6)


def test_centered_ranks_are_scale_free() -> None:
    x = np.random.default_rng(0).normal(size=(7, 2))
    np.testing.assert_array_equal(centered_ranks(x), centered_ranks(1000 * x + 3))


def test_ask_is_a_pure_function_of_seed_and_generation() -> None:
    s = make_strategy(algo_cfg(), dim=50, seed=3)
    state = s.init(np.zeros(50, np.float32))
    a, b = s.ask(state), s.ask(state)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    other = make_strategy(algo_cfg(), dim=50, seed=4).ask(state)
    assert not np.array_equal(a.offsets, other.offsets)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_strategy_converges_on_sphere(name: str, optimizer: str) -> None:
    """Maximize -||x - 1||^2 from 0: must get close, not merely run."""
    dim = 20
    lr = 0.05 if optimizer == "adam" else 0.5
    s = make_strategy(
        algo_cfg(
            name=name, population_size=50, sigma=0.1, learning_rate=lr, l2_coeff=0.0, optimizer=optimizer
        ),
        dim=dim,
        seed=0,
    )
    state = s.init(np.zeros(dim, np.float32))
    start = float(np.sum((state.params - 1) ** 2))
    for _ in range(300):
        pop = s.ask(state)
        fit = np.array(
            [
                [-np.sum((s.member_params(state, pop, i, sg) - 1) ** 2) for sg in pop.signs]
                for i in range(len(pop.offsets))
            ]
        )
        state, _ = s.tell(state, pop, fit)
    end = float(np.sum((state.params - 1) ** 2))
    assert end < 0.05 * start, (start, end)


def test_nonfinite_members_are_excluded_and_counted() -> None:
    s = make_strategy(algo_cfg(population_size=10), dim=8, seed=0)
    state = s.init(np.zeros(8, np.float32))
    pop = s.ask(state)
    fit = np.random.default_rng(1).normal(size=(5, 2))
    clean_state, _ = s.tell(state, pop, fit)
    poisoned = fit.copy()
    poisoned[2, 0] = np.nan
    poisoned[4, 1] = np.inf
    new_state, metrics = s.tell(state, pop, poisoned)
    assert np.isfinite(new_state.params).all()
    assert metrics["nonfinite_members"] == 4  # two pairs, both sides excluded
    assert not np.array_equal(new_state.params, clean_state.params)  # the update used fewer pairs
    all_bad, metrics = s.tell(state, pop, np.full((5, 2), np.nan))
    np.testing.assert_array_equal(all_bad.params, state.params)
    assert all_bad.generation == 1
