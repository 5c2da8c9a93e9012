"""Drift during a run: how far the parameters and the policy moved from a stage-boundary snapshot.

Issue #14 asks, besides the returns, how far a run moved away from what it had learned. The
ruler (:mod:`esbench.training.ruler`) logs two kinds of drift at every evaluation point, for ES and
the RL baselines alike (each family supplies only "the action distribution of my policy on these
states"):

* **Parameter drift** from the last stage-boundary snapshot θ_b (the parameters the stage being
  trained started from; the initial ones in stage 0), ``Δ = θ - θ_b`` in float64: global L2
  ``||Δ||_2``, relative ``||Δ||_2 / ||θ_b||_2`` and update sparsity ``mean(|Δ| <= τ)`` at
  ``τ = 1e-6`` and ``1e-4`` (:data:`SPARSITY_THRESHOLDS`; Abdi, Gupta et al. 2026, "Evolutionary
  Strategies lead to Catastrophic Forgetting in LLMs", arXiv:2601.20861). Columns
  :data:`DRIFT_COLUMNS`, the same on every row of a point (one parameter vector).
* **Policy drift** on earlier stages' states: when stage k ends (and a later stage follows), the
  policy π_k that ended it plays the first :data:`STATE_EPISODES` evaluation episodes of stage k
  (the run's fixed evaluation seeds ``eval.seed + e``, acting deterministically) and at most
  :data:`MAX_STATES` of the observations it sees are kept, evenly spaced (:func:`visited_states`),
  with π_k's action distributions on them, computed with π_k's own observation normalization
  (:class:`StageStates`). At every later point the current policy's distributions on those states
  give ``policy_kl = mean_s KL(π_k(.|s) || π(.|s))`` (:mod:`esbench.measures.distribution`), on
  the row evaluating stage k. At the point that ends stage k it is 0 by construction.

The recorded states are data (arrays), kept in the trainers' checkpoints (a resumed run computes
the same numbers) and written next to ``snapshots.npz`` as ``stage_states.npz``
(:mod:`esbench.tracking.stage_states`). They depend only on the parameters, the
observation statistics and the evaluation seeds, so the numbers are a pure function of the config
whatever the number of workers.

**Behavioural probes** (a sequence only): when stage k begins, the policy it starts from records
stage k's *probe set* the same way (:meth:`~esbench.training.sequence_loop.SequenceLoop.record_probe`),
and when any stage ends, the policy that ends it gives its distributions on every probe set so far
(:meth:`~esbench.training.sequence_loop.SequenceLoop.end_probes`). They are kept in the
checkpoints and written by :func:`write_probes`; the report turns them into the RMS mean-action
change, the RMS parameter change and (between stochastic policies only) the KL of each stage's
own update and of the drift after it (:mod:`esbench.analysis.retention_behaviour`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from esbench.measures.distribution import ActionDist, kl_divergence
from esbench.measures.drift import SPARSITY_THRESHOLDS, param_drift
from esbench.policies.episode import discrete_action, run_episode
from esbench.tracking.probes import probes_of
from esbench.tracking.probes import write_probes as write_probes_file
from esbench.tracking.schema import DRIFT_COLUMNS, KL_COLUMN, PROBE_STATES_FILE, PROBES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states

#: Evaluation episodes (the first ones of the fixed seeds) whose states a stage records.
STATE_EPISODES = 3
#: At most this many states per stage, evenly spaced over those episodes' steps.
MAX_STATES = 256

#: "The action distributions of the current policy on these raw observations": what a family supplies.
DistributionFn = Callable[[np.ndarray], ActionDist]


# --- parameter drift --------------------------------------------------------------------------


def drift_columns(params: np.ndarray, snapshot: np.ndarray) -> dict[str, float]:
    """:data:`DRIFT_COLUMNS` of ``params`` from ``snapshot`` (:func:`param_drift` at 1e-6, 1e-4)."""
    d = param_drift(params, snapshot, SPARSITY_THRESHOLDS)
    return dict(
        zip(DRIFT_COLUMNS, (d["l2"], d["rel"], d["sparsity@1e-06"], d["sparsity@0.0001"]), strict=True)
    )


# --- policy drift -----------------------------------------------------------------------------


class _FunctionActor:
    """An ``obs -> action`` function as an :class:`~esbench.policies.episode.Actor`, handing a
    ``Discrete`` env a plain ``int`` (as the RL evaluation does)."""

    __slots__ = ("discrete", "fn")

    def __init__(self, fn: Callable[[Any], Any], space: gym.Space[Any]) -> None:
        self.fn = fn
        self.discrete = isinstance(space, gym.spaces.Discrete)

    def act(self, obs: Any) -> Any:
        action = self.fn(obs)
        return discrete_action(action) if self.discrete else action


class _StateThinner:
    """Keeps every ``stride``-th observation it is shown, halving what it holds (and doubling the
    stride) whenever it holds more than ``2 * max_states``: memory bounded whatever the length."""

    def __init__(self, max_states: int) -> None:
        self.max_states = max_states
        self.kept: list[np.ndarray] = []
        self.stride = 1
        self.seen = 0

    def __call__(self, obs: Any) -> None:
        if self.seen % self.stride == 0:
            self.kept.append(np.array(obs, copy=True))
            if len(self.kept) > 2 * self.max_states:
                self.kept = self.kept[::2]
                self.stride *= 2
        self.seen += 1


def visited_states(
    env: gym.Env, act: Callable[[Any], Any], seeds: Sequence[int], max_states: int = MAX_STATES
) -> tuple[np.ndarray, int]:
    """Play one deterministic episode per seed and keep at most ``max_states`` observations.

    The episodes are played by :func:`esbench.policies.episode.run_episode` (the loop ES rollouts
    and the RL evaluation run). Every observation an action is chosen on is a candidate; memory
    stays bounded by thinning (keep every ``stride``-th step, counted across the episodes; when
    more than ``2 * max_states`` are held, drop every other one and double the stride), then at
    most ``max_states`` are taken evenly spaced from those held. The result depends only on the
    episodes, so replaying them gives the same states.

    Args:
        env: The stage's evaluation env.
        act: The action for one raw observation (the policy's own normalization inside).
        seeds: Reset seeds, one episode each.
        max_states: The cap, >= 1.

    Returns:
        (states, shape (n, *obs_shape) in the env's dtype, with 1 <= n <= max_states; steps played).
    """
    actor = _FunctionActor(act, env.action_space)
    thinner = _StateThinner(max_states)
    steps = sum(run_episode(env, actor, seed, on_obs=thinner).length for seed in seeds)
    kept = thinner.kept
    pick = np.unique(np.linspace(0, len(kept) - 1, min(max_states, len(kept))).round().astype(int))
    return np.stack([kept[i] for i in pick]), steps


def record_stage_states(
    stage: str,
    env: gym.Env,
    act: Callable[[Any], Any],
    distribution: DistributionFn,
    eval_seed: int,
    episodes: int,
) -> StageStates:
    """The :class:`StageStates` of ``stage`` for the policy acting as ``act`` / ``distribution``:
    the first ``min(episodes, STATE_EPISODES)`` evaluation seeds ``eval_seed + e``."""
    seeds = [int(eval_seed) + e for e in range(max(1, min(int(episodes), STATE_EPISODES)))]
    states, steps = visited_states(env, act, seeds)
    return StageStates(stage, states, distribution(states), steps)


def policy_kl(recorded: StageStates, current: ActionDist) -> float:
    """``mean_s KL(π_k(.|s) || π(.|s))`` over the recorded states (the ``policy_kl`` column)."""
    return float(np.mean(kl_divergence(recorded.reference, current)))


def kl_columns(records: Sequence[StageStates], distribution: DistributionFn) -> dict[str, dict[str, float]]:
    """``{stage: {"policy_kl": value}}`` for every recorded stage, the current policy given by
    ``distribution`` (for :func:`esbench.training.ruler.point_rows`' ``per_stage``)."""
    return {r.stage: {KL_COLUMN: policy_kl(r, distribution(r.states))} for r in records}


# --- the file ---------------------------------------------------------------------------------


def action_bounds(space: gym.Space[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """The bounds of a ``Box`` action space (the mean action's scale,
    :func:`esbench.analysis.retention_behaviour.mean_action`); None for any other space."""
    if isinstance(space, gym.spaces.Box):
        return np.asarray(space.low, dtype=np.float64), np.asarray(space.high, dtype=np.float64)
    return None


def write_probes(
    directory: Path,
    probes: Sequence[StageStates],
    ends: Sequence[Sequence[ActionDist]],
    stochastic: bool,
    bounds: tuple[np.ndarray, np.ndarray] | None,
) -> None:
    """Write a sequence run's behavioural probes (nothing without a probe set).

    ``probes.npz`` (:func:`esbench.tracking.probes.write_probes`): every probe set's
    stage-start distributions and, per ended stage, the distributions of the policy that ended it
    on every probe set recorded so far; ``probe_states.npz`` (:func:`write_stage_states`): the
    probe states themselves, so a re-analysis can replay any policy on them.

    Args:
        directory: The run directory.
        probes: One per stage begun (:meth:`esbench.training.sequence_loop.SequenceLoop.record_probe`).
        ends: ``ends[j][k]``: the policy that ended stage j on probe set k.
        stochastic: The policy samples its actions (SB3 actor-critic): the KL between two of its
            versions is defined.
        bounds: The Box action bounds (:func:`action_bounds`), else None.
    """
    if not probes:
        return
    data = probes_of(
        [r.stage for r in probes],
        [r.reference for r in probes],
        ends,
        [r.states.shape[0] for r in probes],
        stochastic,
        bounds,
    )
    write_probes_file(Path(directory) / PROBES_FILE, data)
    write_stage_states(Path(directory) / PROBE_STATES_FILE, probes)


__all__ = [
    "MAX_STATES",
    "STATE_EPISODES",
    "DistributionFn",
    "action_bounds",
    "drift_columns",
    "kl_columns",
    "policy_kl",
    "record_stage_states",
    "visited_states",
    "write_probes",
]
