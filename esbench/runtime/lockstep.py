"""Episodes of many differently-perturbed policies, stepped in lockstep over B environments.

The single-episode loop (:func:`esbench.policies.episode.run_episode`) pays the framework's per-call
overhead (numpy for the MLP, torch and oneDNN for the Atari CNN) for every environment step; here
one batched forward pass serves B environments (:class:`~esbench.policies.mlp.BatchedMLP`,
:class:`~esbench.policies.lowrank.LowRankBatchedMLP`, :class:`~esbench.policies.cnn.BatchedCNN`),
so that overhead is paid once per B steps and the rollout runs closer to the simulator's raw rate.
Each slot is refilled from the job queue as soon as its episode ends. Every episode is still a
pure function of its own job (parameters, reset seed, noise stream): the same numbers as if it ran
alone, whatever shares its batch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from esbench.policies.episode import NOISE_BLOCK, Episode
from esbench.policies.lowrank import LowRank


@dataclass
class EpisodeJob:
    """One episode to play: the parameters, the reset seed, optional action noise."""

    params: np.ndarray | LowRank  # (num_params,) float32, or factors over a batch's base weights
    seed: int
    noise: tuple[np.random.Generator, float] | None = None  # (stream, std): training only
    collect_obs: bool = False


class _Slot:
    """The live state of one environment's current episode."""

    __slots__ = ("frames", "index", "job", "length", "observations", "ret")

    def __init__(self, index: int, job: EpisodeJob, frames: int) -> None:
        self.index = index
        self.job = job
        self.ret = 0.0
        self.length = 0
        self.frames = frames
        self.observations: list[np.ndarray] | None = [] if job.collect_obs else None


class BatchPolicy(Protocol):
    """What the lockstep loop drives: :class:`~esbench.policies.mlp.BatchedMLP` or
    :class:`~esbench.policies.cnn.BatchedCNN` (a job's dense parameters per slot), or
    :class:`~esbench.policies.lowrank.LowRankBatchedMLP` (its factors). ``act`` takes the slots'
    observations stacked on a first axis of length ``batch``."""

    batch: int

    def set_slot(self, slot: int, member: Any, /) -> None: ...

    def act(self, obs: np.ndarray) -> np.ndarray: ...


def run_lockstep(envs: list[gym.Env], policy: BatchPolicy, jobs: list[EpisodeJob]) -> list[Episode]:
    """Play every job; returns their episodes in job order.

    Args:
        envs: ``policy.batch`` environments of the same id (slot b uses ``envs[b]``).
        policy: the batched policy, observation statistics already set on its template (and, for
            low-rank jobs, its base weights).
        jobs: the episodes to play (``job.params`` of the kind ``policy.set_slot`` takes).
    """
    batch = policy.batch
    if len(envs) != batch:
        raise ValueError(f"{len(envs)} environments for a batch of {batch}")
    continuous = isinstance(envs[0].action_space, gym.spaces.Box)
    act_shape: tuple[int, ...] = tuple(envs[0].action_space.shape or ()) if continuous else ()
    # Slot b's current observation. Integer observations (Atari's uint8 frame stacks) are kept as
    # they are, the CNN scales them itself; real-valued ones are stored as the float32 the MLPs
    # compute in (one rounding, the one MLPPolicy.act makes).
    space = envs[0].observation_space
    integer = space.dtype is not None and np.issubdtype(space.dtype, np.integer)
    obs_buf = np.zeros((batch, *(space.shape or ())), space.dtype if integer else np.float32)
    # Action noise, vectorized over slots: slot b's current block of draws and its position in it.
    # A block is drawn when an episode starts and whenever its slot has used all of the previous
    # one; ``until_refill`` counts down (in plain Python) to the next slot that runs out, so the
    # per-step cost is one gather, one add and one increment.
    noise_blocks = np.zeros((batch, NOISE_BLOCK, *act_shape), np.float32)
    noisy = np.zeros(batch, bool)
    noise_pos = np.zeros(batch, np.int64)
    rows = np.arange(batch)
    results: list[Episode | None] = [None] * len(jobs)
    queue = deque(enumerate(jobs))
    slots: list[_Slot | None] = [None] * batch
    until_refill = NOISE_BLOCK

    def draw_block(b: int) -> None:
        slot = slots[b]
        assert slot is not None and slot.job.noise is not None
        rng, std = slot.job.noise
        noise_blocks[b] = std * rng.standard_normal((NOISE_BLOCK, *act_shape)).astype(np.float32)
        noise_pos[b] = 0

    def start(b: int) -> None:
        if not queue:
            slots[b] = None
            noisy[b] = False
            return
        index, job = queue.popleft()
        policy.set_slot(b, job.params)
        obs, info = envs[b].reset(seed=int(job.seed))
        obs_buf[b] = obs
        slot = _Slot(index, job, int(info.get("frames", 0)))
        if slot.observations is not None:
            slot.observations.append(np.asarray(obs, np.float64).ravel())
        slots[b] = slot
        noisy[b] = continuous and job.noise is not None and job.noise[1] > 0
        if noisy[b]:
            draw_block(b)  # a fresh block lasts NOISE_BLOCK steps: never sooner than until_refill

    for b in range(batch):
        start(b)
    noise_mask = noisy.reshape(-1, *([1] * len(act_shape)))  # a view: follows ``noisy``
    any_noisy = bool(noisy.any())
    live = [(b, s) for b, s in enumerate(slots) if s is not None]
    while live:
        actions = policy.act(obs_buf)
        if any_noisy:
            np.add(actions, noise_blocks[rows, noise_pos], out=actions, where=noise_mask)
            noise_pos += noisy
            until_refill -= 1
            if until_refill == 0:
                for j in np.flatnonzero(noisy & (noise_pos == NOISE_BLOCK)).tolist():
                    draw_block(j)  # the next block of this episode's own stream
                until_refill = NOISE_BLOCK - int(noise_pos[noisy].max())
        ended = False
        for b, slot in live:
            action = actions[b] if continuous else int(actions[b])
            obs, reward, terminated, truncated, info = envs[b].step(action)
            slot.ret += float(reward)
            slot.length += 1
            slot.frames += info.get("frames", 1)
            if terminated or truncated:
                results[slot.index] = _finish(slot)
                start(b)
                ended = True
            else:
                obs_buf[b] = obs
                if slot.observations is not None:
                    slot.observations.append(np.asarray(obs, np.float64).ravel())
        if ended:
            live = [(b, s) for b, s in enumerate(slots) if s is not None]
            any_noisy = bool(noisy.any())
    return results  # type: ignore[return-value]


def _finish(slot: _Slot) -> Episode:
    episode = Episode(ret=slot.ret, length=slot.length, frames=slot.frames)
    if slot.observations:
        stacked = np.stack(slot.observations)
        episode.obs_total = stacked.sum(axis=0)
        episode.obs_sumsq = np.square(stacked).sum(axis=0)
    return episode
