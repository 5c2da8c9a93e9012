"""Every registered ES strategy on synthetic objectives: purity, convergence, NaN exclusion.

Each test is parametrized over the registry, so a new variant is tested the moment it registers.
Thresholds (stated per objective below) are what a working strategy reaches within the budget;
a broken update (wrong sign, wrong scale, ignored fitness) does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.config.registry import algorithms, get_algorithm
from esbench.runner import load_components
from esbench.strategies import Strategy, make_strategy
from esbench.strategies.shaping import centered_ranks

load_components()
ES_KEYS = sorted(algorithms("es"))

#: Per-variant settings for the synthetic objectives (dimension 10 unless stated): a variant's
#: defaults are tuned for policies, not for these functions. Absent keys use the schema defaults.
SYNTHETIC: dict[str, dict[str, Any]] = {
    "openai_es": {"population_size": 50, "sigma": 0.1, "learning_rate": 0.05, "l2_coeff": 0.0},
    # 10 of 25 directions: the top-b refinement (ARS V2-t) is what the convergence tests exercise.
    "ars": {"population_size": 50, "sigma": 0.1, "learning_rate": 0.05, "top_directions": 10},
    "simple_es": {"population_size": 50, "sigma": 0.1, "learning_rate": 0.02},
    "pgpe": {"population_size": 50, "radius_init": None, "sigma": 0.1, "learning_rate": 0.05},
    "snes": {"population_size": 50, "sigma": 0.3},
    "cma_es": {"population_size": 16, "sigma": 0.3},
    # A flat vector has no weight matrix: EGGROLL is then OpenAI-ES (tests/test_eggroll.py has matrices).
    "eggroll": {"population_size": 50, "sigma": 0.1, "learning_rate": 0.05, "l2_coeff": 0.0},
}

#: Overrides for the narrow curved valley of Rosenbrock (smaller perturbations follow it better).
ROSENBROCK: dict[str, dict[str, Any]] = {
    "openai_es": {"sigma": 0.02, "learning_rate": 0.02},
    "eggroll": {"sigma": 0.02, "learning_rate": 0.02},
    "ars": {"sigma": 0.02, "learning_rate": 0.02},
    # The step is alpha/(n sigma) sum A_i eps_i: a smaller sigma needs a smaller alpha.
    "simple_es": {"sigma": 0.02, "learning_rate": 0.0006},
    # ClipUp steps have a fixed length: a shorter one (max_speed = 2 lr) follows the valley.
    "pgpe": {"sigma": 0.02, "learning_rate": 0.01, "max_speed": 0.02},
}


def algo_cfg(name: str, **overrides: Any) -> Any:
    """The structured config of ``name`` with a small noise table and the synthetic settings."""
    cfg = OmegaConf.structured(get_algorithm(name).schema)
    cfg.noise_table_size = 200_000
    for k, v in {**SYNTHETIC.get(name, {}), **overrides}.items():
        if k in cfg:
            cfg[k] = v
    return cfg


def optimize(s: Strategy, f: Callable[[np.ndarray], float], x0: np.ndarray, generations: int) -> np.ndarray:
    """Run ask/tell maximizing ``f`` for ``generations``; returns the final mean."""
    state = s.init(x0)
    for _ in range(generations):
        pop = s.ask(state)
        fit = np.array([[f(s.member_params(state, pop, i, sg)) for sg in pop.signs] for i in range(len(pop))])
        state, _ = s.tell(state, pop, fit)
    return state.params


def sphere(x: np.ndarray) -> float:
    return -float(np.sum((x - 1.0) ** 2))


def rosenbrock(x: np.ndarray) -> float:
    x = x.astype(np.float64)
    return -float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def rastrigin(x: np.ndarray) -> float:
    x = x.astype(np.float64) - 0.5
    return -float(10 * len(x) + np.sum(x**2 - 10 * np.cos(2 * np.pi * x)))


def test_centered_ranks_known_answer() -> None:
    x = np.array([[3.0, -1.0], [10.0, 0.5]])
    np.testing.assert_allclose(centered_ranks(x), [[1 / 6, -0.5], [0.5, -1 / 6]], rtol=1e-6)


def test_centered_ranks_are_scale_free() -> None:
    x = np.random.default_rng(0).normal(size=(7, 2))
    np.testing.assert_array_equal(centered_ranks(x), centered_ranks(1000 * x + 3))


@pytest.mark.parametrize("name", ES_KEYS)
def test_ask_is_a_pure_function_of_seed_and_generation(name: str) -> None:
    s = make_strategy(algo_cfg(name), dim=50, seed=3)
    state = s.init(np.zeros(50, np.float32))
    a, b = s.ask(state), s.ask(state)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(s.member_params(state, a, 0, 1), s.member_params(state, b, 0, 1))
    other = make_strategy(algo_cfg(name), dim=50, seed=4).ask(state)
    assert not np.array_equal(a.offsets, other.offsets)


@pytest.mark.parametrize("name", ES_KEYS)
def test_replicas_that_replay_tell_stay_identical(name: str) -> None:
    """Two strategy objects fed the same fitness reach bit-identical states (what workers do)."""
    a, b = (make_strategy(algo_cfg(name), dim=12, seed=5) for _ in range(2))
    sa, sb = a.init(np.zeros(12, np.float32)), b.init(np.zeros(12, np.float32))
    for _ in range(5):
        pop = a.ask(sa)
        fit = np.array(
            [[sphere(a.member_params(sa, pop, i, sg)) for sg in pop.signs] for i in range(len(pop))]
        )
        sa, _ = a.tell(sa, pop, fit)
        sb, _ = b.tell(sb, b.ask(sb), fit)
    np.testing.assert_array_equal(sa.params, sb.params)
    assert sorted(sa.aux) == sorted(sb.aux)
    for k in sa.aux:
        np.testing.assert_array_equal(sa.aux[k], sb.aux[k])


@pytest.mark.parametrize("name", ES_KEYS)
def test_strategy_converges_on_sphere(name: str) -> None:
    """Maximize -||x - 1||^2 from 0 in dimension 10 for 300 generations: below 5% of the start."""
    x = optimize(make_strategy(algo_cfg(name), dim=10, seed=0), sphere, np.zeros(10, np.float32), 300)
    assert -sphere(x) < 0.05 * 10, -sphere(x)


@pytest.mark.parametrize("name", ES_KEYS)
def test_strategy_improves_on_rosenbrock(name: str) -> None:
    """Rosenbrock in dimension 5 from 0 (value 4): below 1.0 after 1000 generations."""
    s = make_strategy(algo_cfg(name, **ROSENBROCK.get(name, {})), dim=5, seed=0)
    x = optimize(s, rosenbrock, np.zeros(5, np.float32), 1000)
    assert -rosenbrock(x) < 1.0, -rosenbrock(x)


@pytest.mark.parametrize("name", ES_KEYS)
def test_strategy_improves_on_rastrigin(name: str) -> None:
    """Rastrigin (optimum at 0.5) in dimension 5 from 0 (value 12.5): below 6 after 300 generations,
    i.e. out of the starting basin toward the optimum's."""
    x = optimize(make_strategy(algo_cfg(name), dim=5, seed=0), rastrigin, np.zeros(5, np.float32), 300)
    assert -rastrigin(x) < 6.0, -rastrigin(x)


@pytest.mark.parametrize("name", ES_KEYS)
def test_nonfinite_members_are_excluded_and_counted(name: str) -> None:
    s = make_strategy(algo_cfg(name, population_size=10), dim=8, seed=0)
    state = s.init(np.zeros(8, np.float32))
    pop = s.ask(state)
    k = len(pop.signs)
    fit = np.random.default_rng(1).normal(size=(len(pop), k))
    clean_state, _ = s.tell(state, pop, fit)
    poisoned = fit.copy()
    poisoned[2, 0] = np.nan
    poisoned[4, k - 1] = np.inf
    new_state, metrics = s.tell(state, pop, poisoned)
    assert np.isfinite(new_state.params).all()
    assert metrics["nonfinite_members"] == 2 * k  # both members excluded, every evaluation counted
    assert not np.array_equal(new_state.params, clean_state.params)  # the update used fewer members
    all_bad, metrics = s.tell(state, pop, np.full((len(pop), k), np.nan))
    np.testing.assert_array_equal(all_bad.params, state.params)
    assert all_bad.generation == 1


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "clipup"])
def test_openai_es_converges_with_every_optimizer(optimizer: str) -> None:
    lr = {"adam": 0.05, "sgd": 0.5, "clipup": 0.05}[optimizer]
    s = make_strategy(algo_cfg("openai_es", optimizer=optimizer, learning_rate=lr), dim=10, seed=0)
    x = optimize(s, sphere, np.zeros(10, np.float32), 300)
    assert -sphere(x) < 0.05 * 10, (optimizer, -sphere(x))
