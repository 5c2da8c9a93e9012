"""Where an ES worker's time goes on MuJoCo, one process, no Dask: the stages between the raw
simulator rate and a real ES rollout.

``esbench bench`` compares ES with "raw simulator rate x workers". That limit steps the simulator
with a constant action; an ES rollout differs from it in three ways, each measured here in this
process on the same environment:

1. **The policy's actions.** A moving body costs MuJoCo more than a still one (contacts,
   constraint solving). :func:`rollout_breakdown` records the actions a real ES generation takes
   and replays them through one environment with no policy: the simulator's rate under ES's load.
2. **The ES rollout itself.** ``evaluate_chunk`` on the whole population in this process: the
   batched MLP forward pass, observation normalization, action noise and the lockstep loop.
3. **Distribution** (Dask tasks, the per-generation barrier) is what ``esbench bench`` adds on top
   with 1 and 2 workers.

The generation measured is not the first: ``warm_generations`` real ES updates run first, so the
policy moves as it does in the steady-state generations the ES rates are taken from.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
from omegaconf import OmegaConf

from esbench.envs import make_env
from esbench.runtime.replica import SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import RunSpec, evaluate_chunk, get_context
from esbench.training.es import merge_results

Recording = list[tuple[int | None, list[np.ndarray]]]  # (reset seed, actions) per episode


class ActionRecorder(gym.Wrapper):
    """Records each episode's reset seed and actions, so the episode can be replayed policy-free."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.episodes: Recording = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self.episodes.append((seed, []))
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.episodes[-1][1].append(np.array(action, copy=True))
        return self.env.step(action)


def _timed_chunk(spec: RunSpec, state: TrainerState) -> tuple[float, Any]:
    """Steps/s of one whole-population ``evaluate_chunk`` in this process, and its result."""
    msg = SyncMessage(state.generation, state_digest(state), ())
    members = list(range(len(get_context(spec).strategy.ask(state.es).offsets)))
    t0 = time.perf_counter()
    result = evaluate_chunk(spec, msg, members, "train", snapshot=state)
    seconds = time.perf_counter() - t0
    return float(result.lengths.sum()) / seconds, result


def replay(env: gym.Env, episodes: Recording) -> tuple[float, float]:
    """Replay recorded episodes in ``env`` (same reset seed, same actions, no policy).

    Returns:
        (steps per second, the sum of all rewards): the sum equals the recorded generation's total
        return when the replay really repeats its episodes.
    """
    steps, total, t0 = 0, 0.0, time.perf_counter()
    for seed, actions in episodes:
        env.reset(seed=seed)
        for action in actions:
            total += float(env.step(action)[1])
        steps += len(actions)
    return steps / (time.perf_counter() - t0), total


def rollout_breakdown(cfg: Any, warm_generations: int = 3, repeats: int = 2) -> dict[str, Any]:
    """Measure stages 1 and 2 for the run config ``cfg`` (an ES config on a MuJoCo task).

    Returns:
        ``policy_actions_steps_per_s``: the simulator replaying ES's recorded actions, no policy;
        ``es_rollout_steps_per_s``: ``evaluate_chunk`` over the whole population (best of
        ``repeats``, as the raw rate it is compared with is a best case too); ``generation``: the
        generation measured; ``episodes``, ``steps``: its size.
    """
    spec = RunSpec.from_config(cfg, run_key=f"bench-rollout-{time.monotonic_ns()}")
    ctx = get_context(spec)
    state = ctx.initial_state()
    for _ in range(warm_generations):
        population = ctx.strategy.ask(state.es)
        _, result = _timed_chunk(spec, state)
        record, _ = merge_results(population, [result])
        state, _ = advance(ctx.strategy, state, record)
    rates = [_timed_chunk(spec, state)[0] for _ in range(repeats)]
    _, recorded = record_generation(spec, state)
    replay_env = make_env(OmegaConf.create(spec.env), training=True)
    replays = [replay(replay_env, recorded)[0] for _ in range(repeats)]
    return {
        "generation": state.generation,
        "episodes": len(recorded),
        "steps": sum(len(a) for _, a in recorded),
        "policy_actions_steps_per_s": max(replays),
        "es_rollout_steps_per_s": max(rates),
    }


def record_generation(spec: RunSpec, state: TrainerState) -> tuple[Any, Recording]:
    """Play the generation at ``state`` in this process, recording every episode's reset seed and
    the actions ES took (after action noise): the chunk result and the recording."""
    ctx = get_context(spec)
    originals = list(ctx.envs), ctx.env
    recorders = [ActionRecorder(e) for e in (ctx.envs or [ctx.env])]
    ctx.envs = recorders if ctx.envs else []
    ctx.env = recorders[0]
    try:
        _, result = _timed_chunk(spec, state)
    finally:
        ctx.envs, ctx.env = originals
    return result, [episode for r in recorders for episode in r.episodes]
