"""What is specific to ARS, SNES and the simplest ES, on examples small enough to do by hand.

The registry-wide tests (tests/test_strategies.py) check that every variant converges; these check
each variant's own equations on hand-computed numbers (with a hand-written noise table, so every
perturbation is a vector one can read), and ARS's config: V1/V2, the linear policy, the per-env
survival-bonus shift, and the policy kinds it refuses before any work starts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.config.compose import compose_run_config
from esbench.config.errors import ConfigError
from esbench.runner import load_components
from esbench.runtime.replica import SyncMessage, state_digest
from esbench.runtime.worker import RunSpec, evaluate_chunk, get_context
from esbench.strategies.ars import ARS, ARSConfig
from esbench.strategies.base import Population
from esbench.strategies.noise import NoiseTable
from esbench.strategies.simple_es import SimpleES, SimpleESConfig
from esbench.strategies.snes import SNES, SNESConfig, snes_utilities
from tests.conftest import SMALL, esbench

load_components()

#: Four perturbation directions in two dimensions, at offsets 0, 2, 4, 6 of the table below.
ROWS = [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, -1.0)]


def hand_table(rows: Sequence[Sequence[float]]) -> NoiseTable:
    """A noise table holding exactly ``rows``, one after another (row i at offset i * len(row))."""
    table = object.__new__(NoiseTable)
    table.seed = 0
    table.table = np.asarray(rows, dtype=np.float32).ravel()
    table.size = table.table.size
    return table


def population(n: int, antithetic: bool, dim: int = 2) -> Population:
    """Members 0..n-1 on rows 0..n-1 of a :func:`hand_table`."""
    return Population(generation=0, offsets=np.arange(n, dtype=np.int64) * dim, antithetic=antithetic)


def structured(schema: type, **values: Any) -> Any:
    cfg = OmegaConf.structured(schema)
    for k, v in values.items():
        cfg[k] = v
    return cfg


# -- ARS ------------------------------------------------------------------------------------------
#: (r(+), r(-)) of the four directions. Best returns max(r+, r-): 3.5, 5, 2, 4, so the top 2 are
#: directions 1 and 3; ranking by r(+) alone (3.5, 5, 2, 0) or by |r+ - r-| (5.5, 4, 0, 4) would
#: keep a different pair.
ARS_FITNESS = np.array([[3.5, -2.0], [5.0, 1.0], [2.0, 2.0], [0.0, 4.0]])


@pytest.mark.parametrize(
    ("top", "kept", "expected_step"),
    [
        # b = 2: directions 1, 3; returns used 5, 1, 0, 4 (std sqrt(4.25));
        # sum (r+ - r-) delta = 4 (0, 1) - 4 (1, -1) = (-4, 8); step = 0.1 / (2 sqrt(4.25)) (-4, 8).
        (2, [1, 3], np.array([-4.0, 8.0]) * 0.1 / (2 * math.sqrt(4.25))),
        # b = N = 4: all 8 returns (mean 1.9375, variance 289.75 / 64 = 4.52734375);
        # sum = 5.5 (1, 0) + 4 (0, 1) + 0 (1, 1) - 4 (1, -1) = (1.5, 8).
        (None, [1, 3, 0, 2], np.array([1.5, 8.0]) * 0.1 / (4 * math.sqrt(4.52734375))),
    ],
)
def test_ars_keeps_the_top_b_directions_and_divides_by_the_std_of_their_returns(
    top: int | None, kept: list[int], expected_step: np.ndarray
) -> None:
    """Mania et al. 2018, Algorithm 2 lines 6-7, on numbers done by hand."""
    cfg = structured(ARSConfig, learning_rate=0.1, sigma=0.5, top_directions=top)
    ars = ARS(cfg, hand_table(ROWS), dim=2, seed=0)
    state = ars.init(np.array([0.5, -0.5], np.float32))
    np.testing.assert_array_equal(ars.top_b(ARS_FITNESS), kept)
    new, metrics = ars.tell(state, population(4, antithetic=True), ARS_FITNESS)
    np.testing.assert_allclose(new.params - state.params, expected_step, rtol=1e-5)
    assert metrics["directions_used"] == len(kept)
    assert metrics["sigma_r"] == pytest.approx(float(ARS_FITNESS[kept].std()))


def test_ars_step_does_not_depend_on_the_scale_of_returns() -> None:
    """Dividing by sigma_R makes the step invariant to r -> a r + c (a > 0): why Alg. 2 does it."""
    ars = ARS(structured(ARSConfig, learning_rate=0.1, top_directions=2), hand_table(ROWS), dim=2, seed=0)
    state = ars.init(np.zeros(2, np.float32))
    pop = population(4, antithetic=True)
    a, _ = ars.tell(state, pop, ARS_FITNESS)
    b, _ = ars.tell(state, pop, 1000.0 * ARS_FITNESS + 7.0)
    np.testing.assert_allclose(a.params, b.params, rtol=1e-5)


def test_ars_needs_mirrored_pairs() -> None:
    with pytest.raises(ValueError, match="antithetic must be true"):
        ARS(structured(ARSConfig, antithetic=False), hand_table(ROWS), dim=2, seed=0)


def test_ars_defaults_to_the_papers_linear_policy_and_command_line_overrides_win() -> None:
    cfg = compose_run_config(["algo=ars", "env=hopper", "budget=smoke"])
    assert list(cfg.policy.hidden_sizes) == [] and cfg.policy.bias is False
    assert cfg.algo.reward_shift == 1.0  # Hopper's survival bonus (reference code --shift)
    cfg = compose_run_config(["algo=ars", "env=hopper", "policy.hidden_sizes=[64,64]", "algo.reward_shift=0"])
    assert list(cfg.policy.hidden_sizes) == [64, 64] and cfg.algo.reward_shift == 0.0
    for env, shift in (("humanoid", 5.0), ("halfcheetah", 0.0), ("cartpole", 0.0)):  # unlisted: 0
        assert compose_run_config(["algo=ars", f"env={env}"]).algo.reward_shift == shift, env
    assert compose_run_config(["algo=openai_es", "env=hopper"]).algo.reward_shift == 0.0  # ARS's only


@pytest.mark.parametrize(
    ("overrides", "obs_norm"),
    [
        (["env=hopper"], True),  # auto: V2, the paper's default
        (["env=hopper", "algo.version=v2"], True),
        (["env=hopper", "algo.version=v1"], False),
        (["env=cartpole"], False),  # the env file turns normalization off: auto is then V1
    ],
)
def test_ars_version_sets_observation_normalization(overrides: list[str], obs_norm: bool) -> None:
    cfg = compose_run_config(["algo=ars", *overrides])
    assert cfg.policy.obs_norm is obs_norm
    assert cfg.algo.obs_norm_fraction == 1.0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.version=v1", "policy.obs_norm=true"], "algo.version=v1 needs policy.obs_norm=false"),
        (["env=cartpole", "algo.version=v2"], "algo.version=v2 needs policy.obs_norm=true"),
        (["algo.obs_norm_fraction=0.5"], "every state seen; algo.obs_norm_fraction=0.5; allowed: 1.0"),
        (
            ["algo.population_size=16", "algo.top_directions=9"],
            "exceeds the 8 directions of algo.population_size=16",
        ),
        (["algo.antithetic=false"], "allowed: algo.antithetic=true"),
    ],
)
def test_ars_refuses_configs_that_are_not_ars(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compose_run_config(["algo=ars", *overrides])


def test_ars_v2_collects_observation_statistics_from_every_rollout() -> None:
    """V2's statistics are over all states seen: every member's two rollouts report their sums,
    counting every step; V1's policy does not normalize, so nothing is collected."""
    common = ["algo=ars", "env=hopper", "env.max_episode_steps=30", "algo.population_size=8", *SMALL]
    for version, collects in (("v2", True), ("v1", False)):
        cfg = compose_run_config([*common, f"algo.version={version}"])
        spec = RunSpec.from_config(cfg, run_key=f"test-ars-obs-{version}")
        state = get_context(spec).initial_state()
        msg = SyncMessage(state.generation, state_digest(state), ())
        result = evaluate_chunk(spec, msg, [0, 1, 2, 3], "train")
        if collects:
            assert sorted(result.obs) == [0, 1, 2, 3]
            for i, (total, sumsq, count) in result.obs.items():
                assert count == result.lengths[i].sum() > 0 and total.shape == sumsq.shape == (11,)
        else:
            assert state.obs is None and result.obs == {}


def test_ars_with_a_cnn_fails_before_any_work(tmp_path: Path) -> None:
    """ARS acts with linear or MLP policies only (its registry policy_kinds): one line, exit 2."""
    proc = esbench("run", "algo=ars", "env=atari", "policy.kind=cnn", f"results_dir={tmp_path}", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "esbench: error: algo=ars cannot act with a cnn policy (policy.kind=cnn, policy.hidden_sizes=[]); "
        "allowed: linear, mlp"
    ]
    assert not any(tmp_path.iterdir())


# -- SNES -----------------------------------------------------------------------------------------
def test_snes_utilities_known_answer() -> None:
    """lambda = 4: log(3) - log(k) clipped at 0 is (1.0986, 0.4055, 0, 0), sum 1.5041; minus 1/4."""
    u = snes_utilities(np.array([1.0, 4.0, 2.0, 3.0]))
    total = math.log(3) + math.log(1.5)
    best, second = math.log(3) / total - 0.25, math.log(1.5) / total - 0.25
    np.testing.assert_allclose(u, [-0.25, best, -0.25, second], rtol=1e-12)
    assert u.sum() == pytest.approx(0.0, abs=1e-12)


#: lambda = 4 utilities of ranks 1 and 2 (ranks 3 and 4 get -1/4): log(3) and log(1.5) over their sum.
_T = math.log(3) + math.log(1.5)
_A = math.log(3) / _T - 0.5  # u(+) + u(-) of the mirrored pair that holds rank 1 (and 4)


@pytest.mark.parametrize(
    ("antithetic", "fitness", "grad_mu", "grad_sigma"),
    [
        # lambda = 2, utilities (0.5, -0.5): s0 = (1, 0) beats s1 = (0, 2).
        # grad_mu = 0.5 (1, 0) - 0.5 (0, 2) = (0.5, -1); grad_sigma = 0.5 (0, -1) - 0.5 (-1, 3) = (0.5, -2).
        (False, [[1.0], [0.0]], [0.5, -1.0], [0.5, -2.0]),
        # Mirrored, lambda = 4: +s0 = 3 (rank 1), -s0 = 0 (rank 4), +s1 = 1 (rank 3), -s1 = 2 (rank 2).
        # grad_mu = (u0+ - u0-) s0 + (u1+ - u1-) s1 = (log 3 / T) (1, 0) - (log 1.5 / T) (0, 2);
        # grad_sigma = (u0+ + u0-)(s0^2 - 1) + (u1+ + u1-)(s1^2 - 1) = A (0, -1) - A (-1, 3) = (A, -4A).
        (True, [[3.0, 0.0], [1.0, 2.0]], [math.log(3) / _T, -2 * math.log(1.5) / _T], [_A, -4 * _A]),
    ],
)
def test_snes_update_follows_the_papers_equations(
    antithetic: bool, fitness: list, grad_mu: list, grad_sigma: list
) -> None:
    """mu += eta_mu sigma * grad_mu; sigma *= exp(eta_sigma / 2 * grad_sigma), eta_mu = 1, eta_sigma = 0.5."""
    cfg = structured(SNESConfig, mean_learning_rate=1.0, sigma_learning_rate=0.5, antithetic=antithetic)
    snes = SNES(cfg, hand_table([(1.0, 0.0), (0.0, 2.0)]), dim=2, seed=0)
    state = snes.init(np.array([1.0, 1.0], np.float32))
    sigma = np.array([0.1, 0.2])
    state = type(state)(params=state.params, opt=state.opt, aux={"sigma": sigma.astype(np.float32)})
    pop = population(2, antithetic=antithetic)
    np.testing.assert_allclose(snes.member_params(state, pop, 1, -1), [1.0, 0.6])  # mu - sigma * s1
    new, _ = snes.tell(state, pop, np.array(fitness))
    np.testing.assert_allclose(new.params, 1.0 + sigma * np.array(grad_mu), rtol=1e-6)
    np.testing.assert_allclose(new.aux["sigma"], sigma * np.exp(0.25 * np.array(grad_sigma)), rtol=1e-6)


def run_snes(objective: Any, start: float, generations: int) -> np.ndarray:
    """SNES (sigma 0.3, 50 samples, dimension 10, the default eta_sigma) from ``start``; returns sigma."""
    cfg = structured(SNESConfig, population_size=50, sigma=0.3)
    snes = SNES(cfg, NoiseTable(123, 200_000), dim=10, seed=0)
    state = snes.init(np.full(10, start, np.float32))
    for _ in range(generations):
        pop = snes.ask(state)
        fit = np.array([[objective(snes.member_params(state, pop, i, 1))] for i in range(len(pop))])
        state, _ = snes.tell(state, pop, fit)
    return np.asarray(state.aux["sigma"])


def test_snes_sigma_shrinks_at_the_optimum_of_a_sphere() -> None:
    sigma = run_snes(lambda x: -float(np.sum((x - 1.0) ** 2)), start=1.0, generations=40)
    assert sigma.max() < 0.1 * 0.3, sigma


def test_snes_sigma_grows_on_a_linear_slope() -> None:
    sigma = run_snes(lambda x: float(np.sum(x)), start=0.0, generations=60)
    assert sigma.mean() > 2 * 0.3, sigma


# -- The simplest ES ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("antithetic", "fitness", "expected_step"),
    [
        # n = 3, A = z(1, 2, 3) = (-sqrt(1.5), 0, sqrt(1.5)); sum A eps = sqrt(1.5) (0, 1);
        # step = 0.1 / (3 * 0.5) * sqrt(1.5) (0, 1) = (0, 0.1 / sqrt(1.5)).
        (False, [[1.0], [2.0], [3.0]], [0.0, 0.1 / math.sqrt(1.5)]),
        # mirrored: n = 4 evaluations (1, 3 | 2, 2), A = (-sqrt 2, sqrt 2 | 0, 0); the pair's weight
        # A+ - A- = -2 sqrt 2 on eps_0 = (1, 0); step = 0.1 / (4 * 0.5) * (-2 sqrt 2, 0).
        (True, [[1.0, 3.0], [2.0, 2.0]], [-0.1 * math.sqrt(2.0), 0.0]),
    ],
)
def test_simple_es_update_is_the_notes_formula(antithetic: bool, fitness: list, expected_step: list) -> None:
    """theta += alpha / (n sigma) sum_i A_i eps_i with A the z-scored fitness (Karpathy's note)."""
    cfg = structured(SimpleESConfig, learning_rate=0.1, sigma=0.5, antithetic=antithetic)
    es = SimpleES(cfg, hand_table(ROWS[:3]), dim=2, seed=0)
    state = es.init(np.array([0.25, -0.25], np.float32))
    new, _ = es.tell(state, population(len(fitness), antithetic), np.array(fitness))
    np.testing.assert_allclose(new.params - state.params, expected_step, rtol=1e-5, atol=1e-7)
