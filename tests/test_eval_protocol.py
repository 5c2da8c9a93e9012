"""Evaluation protocols of the RL baselines: sampled / epsilon-greedy / deterministic (eval.policy).

The promises: ``auto`` picks each family's published protocol; a sampled evaluation is a pure
function of the config (same numbers twice) that differs from the deterministic one; and evaluating
never touches a global random stream, so a run's training is the same whatever ``eval.policy`` is.
Real SB3 models on real envs (CartPole, InvertedPendulum, Breakout), trained in this process with the
function the Dask task runs (:func:`esbench.training.sb3.train_process`).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from esbench.baselines.configs import resolve_hparams
from esbench.baselines.evaluation import evaluate, sample_categorical
from esbench.baselines.sb3 import build_model, make_training_env
from esbench.config.compose import compose_run_config
from esbench.config.errors import ConfigError
from esbench.config.eval_protocol import DETERMINISTIC, EvalProtocol, eval_protocol, resolve_eval_protocol
from esbench.envs import make_env
from esbench.training.sb3 import train_process

QUIET = ["tracker=none", "tracker.console=false", "budget=smoke"]

#: Columns a training run writes that evaluation must not change (everything but the eval_* and
#: timing columns).
TRAINING_COLUMNS = [
    "generation",
    "timesteps",
    "frames",
    "episodes",
    "train_return_mean",
    "train_return_max",
    "param_norm",
    "rl/n_updates",
]


@pytest.mark.parametrize(
    ("algo", "kind", "policy", "expected"),
    [
        ("a2c", "atari", "auto", EvalProtocol("sampled")),
        ("ppo", "atari", "auto", EvalProtocol("sampled")),
        ("trpo", "atari", "auto", EvalProtocol("sampled")),
        ("dqn", "atari", "auto", EvalProtocol("epsilon_greedy", 0.05)),
        ("openai_es", "atari", "auto", DETERMINISTIC),
        ("a2c", "mujoco", "auto", DETERMINISTIC),
        ("dqn", "classic", "auto", DETERMINISTIC),
        ("a2c", "atari", "deterministic", DETERMINISTIC),
        ("ppo", "mujoco", "sampled", EvalProtocol("sampled")),
    ],
)
def test_auto_picks_each_familys_published_protocol(
    algo: str, kind: str, policy: str, expected: EvalProtocol
) -> None:
    family = "es" if algo.endswith("_es") else "rl"
    assert resolve_eval_protocol(algo, family, kind, policy, 0.05) == expected


def test_a_config_from_before_eval_policy_was_evaluated_deterministically() -> None:
    old = {"algo": {"name": "a2c"}, "env": {"kind": "atari"}, "eval": {"seed": 1, "episodes": 5}}
    assert eval_protocol(old) == DETERMINISTIC
    new = {"algo": {"name": "a2c"}, "env": {"kind": "atari"}, "eval": {"policy": "auto", "epsilon": 0.05}}
    assert eval_protocol(new).label == "sampled"
    cfg = compose_run_config(["algo=dqn", "env=atari", "env.game=Pong", *QUIET])
    assert eval_protocol(cfg).label == "epsilon-greedy (0.05)"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo=openai_es", "eval.policy=sampled"], "algo=openai_es is an ES policy"),
        (["algo=dqn", "env=cartpole", "eval.policy=sampled"], "algo=dqn has no action distribution"),
        (["algo=a2c", "eval.policy=greedy"], "eval.policy='greedy' is not allowed"),
        (["algo=a2c", "eval.epsilon=1.5"], "eval.epsilon=1.5 is out of range"),
    ],
)
def test_an_impossible_protocol_fails_before_any_work(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compose_run_config([*overrides, *QUIET])


def test_categorical_sampling_follows_the_probabilities() -> None:
    """Inverse-CDF draws land in each bin at its probability (40k draws: within 0.01)."""
    rng = np.random.default_rng(0)
    probs = np.array([0.2, 0.0, 0.5, 0.3], dtype=np.float32)
    draws = np.array([sample_categorical(probs, rng) for _ in range(40_000)])
    freq = np.bincount(draws, minlength=4) / len(draws)
    assert freq[1] == 0.0
    np.testing.assert_allclose(freq, probs, atol=0.01)


def _global_rng_state() -> tuple[Any, ...]:
    mt = np.random.get_state(legacy=False)["state"]  # MT19937: key array and position in it
    return torch.get_rng_state().clone(), (mt["key"].copy(), int(mt["pos"])), random.getstate()


def _assert_same_rng_state(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert torch.equal(a[0], b[0]), "evaluation drew from torch's global RNG"
    assert np.array_equal(a[1][0], b[1][0]) and a[1][1] == b[1][1], "evaluation drew from numpy's global RNG"
    assert a[2] == b[2], "evaluation drew from Python's global RNG"


def _model_and_env(overrides: list[str]) -> tuple[Any, Any]:
    """An untrained SB3 model of the run ``overrides`` describe, and its evaluation env."""
    cfg = compose_run_config([*overrides, *QUIET])
    hp = resolve_hparams(cfg)
    return build_model(cfg, hp, make_training_env(cfg, hp)), make_env(cfg.env, training=False)


@pytest.mark.parametrize(
    "overrides",
    [
        ["algo=a2c", "env=cartpole"],  # categorical
        ["algo=ppo", "env=inverted_pendulum"],  # diagonal Gaussian
        ["algo=a2c", "env=atari", "env.game=Breakout", "env.max_episode_steps=500"],  # the A3C CNN
    ],
)
def test_sampled_evaluation_is_pure_and_touches_no_global_rng(overrides: list[str]) -> None:
    model, env = _model_and_env(overrides)
    episodes = 3
    vec_normalize = getattr(model, "_vec_normalize_env", None)

    def run(protocol: EvalProtocol, timestep: int) -> tuple[float, float, int]:
        before = _global_rng_state()
        result = evaluate(
            model, env, 1_000_000, episodes, vec_normalize, protocol=protocol, run_seed=0, timestep=timestep
        )
        _assert_same_rng_state(before, _global_rng_state())
        return result

    sampled = EvalProtocol("sampled")
    first = run(sampled, 5000)
    assert run(sampled, 5000) == first  # the same stream: the same numbers
    assert run(sampled, 10_000) != first  # another evaluation point: another stream
    assert run(DETERMINISTIC, 5000) != first
    env.close()


def _train(overrides: list[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    cfg = compose_run_config([*overrides, *QUIET])
    rows: list[dict[str, Any]] = []
    summary = train_process(cfg, None, rows.append, lambda blob: None)
    return pd.DataFrame(rows), summary


def test_eval_policy_changes_the_evaluation_and_nothing_else_in_a_run() -> None:
    """A2C on CartPole (categorical), trained in full three times: sampled twice, deterministic once."""
    args = ["algo=a2c", "env=cartpole", "budget.timesteps=4000", "eval.interval_timesteps=1000"]
    s1, sum1 = _train([*args, "eval.policy=sampled"])
    s2, sum2 = _train([*args, "eval.policy=sampled"])
    d, sumd = _train([*args, "eval.policy=deterministic"])
    evals = ["eval_return_mean", "eval_return_std", "eval_timesteps"]
    pd.testing.assert_frame_equal(s1[TRAINING_COLUMNS + evals], s2[TRAINING_COLUMNS + evals])
    assert sum1["params_sha256"] == sum2["params_sha256"]
    pd.testing.assert_frame_equal(s1[TRAINING_COLUMNS], d[TRAINING_COLUMNS])  # training untouched
    assert sum1["params_sha256"] == sumd["params_sha256"]
    assert len(s1) >= 4 and s1["eval_return_mean"].notna().all()
    assert not s1[evals].equals(d[evals])  # ... while the evaluation did change
