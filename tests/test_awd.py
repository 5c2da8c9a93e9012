"""Anchored Weight Decay (``l2_anchor: stage_start``) in the ES family: the update against a
hand-computed one, the anchor set at a stage's start, data-only in the checkpoint, and off by default
(the plain update unchanged, no anchor in the state)."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.strategies import make_strategy
from esbench.strategies.base import ANCHOR_KEY, begin_stage_anchor
from esbench.training.es import CHECKPOINT_TYPES
from esbench.utils import statefile
from tests.test_strategies import algo_cfg

AWD = ["openai_es", "eggroll", "pgpe", "simple_es"]
LR, L2 = 0.05, 0.3


def _sgd(name: str, **kw: object):  # plain SGD: the step is -lr * (loss gradient), by hand
    return algo_cfg(name, optimizer="sgd", momentum=0.0, learning_rate=LR, **kw)


@pytest.mark.parametrize("name", AWD)
def test_anchored_update_matches_the_hand_computed_one(name: str) -> None:
    dim = 8
    theta0 = np.linspace(-1, 1, dim, dtype=np.float32)
    free = make_strategy(_sgd(name, l2_coeff=0.0), dim=dim, seed=1)
    awd = make_strategy(_sgd(name, l2_coeff=L2, l2_anchor="stage_start"), dim=dim, seed=1)
    state = awd.init(theta0)
    np.testing.assert_array_equal(state.aux[ANCHOR_KEY], theta0)
    # A later stage: the parameters moved, begin_stage_anchor puts the anchor there, then they move on.
    anchor = theta0 + np.float32(0.5)
    state = begin_stage_anchor(type(state)(params=anchor.copy(), opt=state.opt, aux=state.aux))
    np.testing.assert_array_equal(state.aux[ANCHOR_KEY], anchor)
    theta = anchor + np.arange(dim, dtype=np.float32) / np.float32(10)
    state = type(state)(params=theta, opt=state.opt, aux=state.aux)
    population = awd.ask(state)
    fitness = np.random.default_rng(0).normal(size=(len(population), 2 if population.antithetic else 1))
    plain_state = type(state)(
        params=theta, opt=state.opt, aux={k: v for k, v in state.aux.items() if k != ANCHOR_KEY}
    )
    no_decay, _ = free.tell(plain_state, population, fitness)  # theta + lr * g
    got, _ = awd.tell(state, population, fitness)
    # By hand: theta' = theta - lr * (-g + l2 * (theta - anchor)) = (theta + lr g) - lr l2 (theta - anchor).
    expected = no_decay.params - np.float32(LR * L2) * (theta - anchor)
    np.testing.assert_allclose(got.params, expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got.aux[ANCHOR_KEY], anchor)  # tell keeps the anchor
    # Decay toward zero would have pulled by l2 * theta instead: the two differ by lr l2 anchor.
    zero = make_strategy(_sgd(name, l2_coeff=L2), dim=dim, seed=1)
    toward_zero, _ = zero.tell(plain_state, population, fitness)
    np.testing.assert_allclose(got.params - toward_zero.params, np.float32(LR * L2) * anchor, atol=1e-6)


@pytest.mark.parametrize("name", AWD)
def test_off_by_default_no_anchor_and_the_plain_update(name: str) -> None:
    cfg = algo_cfg(name)
    assert cfg.l2_anchor == "zero"
    s = make_strategy(cfg, dim=6, seed=2)
    state = s.init(np.ones(6, np.float32))
    assert ANCHOR_KEY not in state.aux and begin_stage_anchor(state) is state
    np.testing.assert_array_equal(s.weight_decay(state), np.float32(cfg.l2_coeff) * state.params)


def test_anchor_is_checkpointed_as_data() -> None:
    s = make_strategy(_sgd("openai_es", l2_coeff=L2, l2_anchor="stage_start"), dim=5, seed=0)
    state = begin_stage_anchor(s.init(np.arange(5, dtype=np.float32)))
    back = statefile.loads(statefile.dumps(state, CHECKPOINT_TYPES), CHECKPOINT_TYPES)
    np.testing.assert_array_equal(back.aux[ANCHOR_KEY], state.aux[ANCHOR_KEY])
