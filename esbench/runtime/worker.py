"""The worker side of an ES generation: evaluate a chunk of population members.

A task receives the run's :class:`RunSpec` (small, plain data), a :class:`SyncMessage` and a list
of member indices; it returns only indices, returns, episode lengths, frames and observation sums
(:class:`ChunkResult`). Each worker process keeps, per run, its environment, policy, strategy
(which maps the machine's one noise table) and a replica of the trainer state, so nothing of size
O(parameters) travels except a snapshot for a worker that cannot catch up by replaying records.
"""

from __future__ import annotations

import atexit
import gc
import math
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from omegaconf import DictConfig, OmegaConf

from esbench.envs import make_env
from esbench.policies import ObsStats, Policy, make_policy
from esbench.policies.episode import Episode, run_episode
from esbench.policies.lowrank import LowRank, LowRankBatchedMLP, LowRankSource
from esbench.policies.mlp import BatchedMLP, MLPPolicy
from esbench.runtime.allocator import keep_large_allocations_on_the_heap
from esbench.runtime.lockstep import EpisodeJob, run_lockstep
from esbench.runtime.replica import SyncMessage, TrainerState, advance, state_digest
from esbench.strategies import ESState, Population, Strategy, make_strategy
from esbench.utils.seeding import (
    ACTION_NOISE,
    ENV_RESET,
    EVAL_ACTIONS,
    INIT_PARAMS,
    OBS_STATS,
    derive_seed,
    generator,
)

if TYPE_CHECKING:  # the CNN (and torch, ~2 s to import) only for Atari runs: MLP rollouts need no torch
    from esbench.policies.cnn import BatchedCNN


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs to know about a run: plain data, a few KB."""

    run_key: str  # unique per run config (a worker may serve several runs)
    seed: int
    algo: dict[str, Any]
    env: dict[str, Any]
    policy: dict[str, Any]
    eval_seed: int
    torch_threads: int = 1
    # A sequence's stages (issue #14): each stage's full env config, ``env`` being the first's.
    # Empty for a run of one stage.
    stage_envs: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_config(
        cls, cfg: DictConfig, run_key: str, stage_envs: tuple[dict[str, Any], ...] = ()
    ) -> RunSpec:
        """The spec of a composed run config (``stage_envs``: the plan's stages' env configs, when
        more than one; the first is the env the policy is built for)."""

        def plain(node: Any) -> dict[str, Any]:
            return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]

        return cls(
            run_key=run_key,
            seed=int(cfg.seed),
            algo=plain(cfg.algo),
            env=dict(stage_envs[0]) if stage_envs else plain(cfg.env),
            policy=plain(cfg.policy),
            eval_seed=int(cfg.eval.seed),
            torch_threads=int(cfg.torch_threads),
            stage_envs=tuple(stage_envs) if len(stage_envs) > 1 else (),
        )


@dataclass
class ChunkResult:
    """Outcome of one task. ``stale`` means the worker needs a snapshot to reach the state."""

    members: np.ndarray  # (m,) member indices (eval: episode indices)
    returns: np.ndarray  # (m, k) k = 2 antithetic / 1
    lengths: np.ndarray  # (m, k) agent steps
    frames: np.ndarray  # (m, k) emulator frames (= lengths off Atari)
    obs: dict[int, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)
    cpu_s: float = 0.0
    stale: bool = False


class RunContext:
    """Per-process, per-run objects: built once, reused by every task of the run."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.algo = OmegaConf.create(spec.algo)
        self.env_cfg = OmegaConf.create(spec.env)
        self.env = make_env(self.env_cfg, training=True)
        self.eval_env = make_env(self.env_cfg, training=False) if self.env_cfg.kind == "atari" else self.env
        self.policy: Policy = make_policy(OmegaConf.create(spec.policy), self.env, self.env_cfg, spec.seed)
        self.strategy: Strategy = make_strategy(
            self.algo, self.policy.num_params, spec.seed, self.policy.param_layout()
        )
        # MLP and CNN policies step up to B environments in lockstep with one batched forward pass
        # (bit-identical per slot to the one-by-one path, so B never changes the numbers).
        self.batched: BatchedMLP | BatchedCNN | None = None
        batch = int(self.algo.get("rollout_batch", 1))
        if batch > 1 and isinstance(self.policy, MLPPolicy):
            self.batched = BatchedMLP(self.policy, batch)
        elif batch > 1 and spec.policy.get("kind") == "cnn":
            from esbench.policies.cnn import BatchedCNN, CNNPolicy

            self.batched = BatchedCNN(cast(CNNPolicy, self.policy), batch)
        # The lockstep environments (training, and evaluation where it differs: Atari), each list
        # starting with the env of the one-by-one path. MuJoCo's are cheap and all built now; Atari's
        # (an emulator each) are built when a task first needs that many slots (lockstep_envs).
        self.envs: list[Any] = [self.env] if self.batched is not None else []
        self.eval_envs: list[Any] = [self.eval_env] if self.batched is not None else []
        # A low-rank strategy (EGGROLL) plays its training members as factors over shared weights.
        self.lowrank: LowRankBatchedMLP | None = None
        self.factored: LowRankSource | None = None
        if isinstance(self.batched, BatchedMLP) and getattr(self.strategy, "low_rank", False):
            self.factored = cast(LowRankSource, self.strategy)
            self.lowrank = LowRankBatchedMLP(self.batched.t, self.batched.batch, self.factored.rank)
        self.states: dict[int, TrainerState] = {}
        self.verified: set[int] = set()
        # A sequence's stages: (env, eval env, lockstep envs, lockstep eval envs) per stage, built
        # when first used.
        self.stage = 0
        self.stage_sets: dict[int, tuple[Any, Any, list[Any], list[Any]]] = {
            0: (self.env, self.eval_env, self.envs, self.eval_envs)
        }
        if isinstance(self.batched, BatchedMLP):
            self.lockstep_envs(batch, evaluation=False)

    def select_stage(self, stage: int) -> None:
        """Play on stage ``stage``'s environments from now on (built on first use; the policy,
        strategy and trainer state are the run's, shared by every stage)."""
        if stage == self.stage:
            return
        if stage not in self.stage_sets:
            if not 0 <= stage < len(self.spec.stage_envs):
                raise ValueError(f"stage {stage} of a run with {len(self.spec.stage_envs) or 1} stage(s)")
            env_cfg = OmegaConf.create(self.spec.stage_envs[stage])
            env = make_env(env_cfg, training=True)
            eval_env = make_env(env_cfg, training=False) if env_cfg.kind == "atari" else env
            lockstep = self.batched is not None  # each lockstep list starts with the stage's env
            self.stage_sets[stage] = (env, eval_env, [env] * lockstep, [eval_env] * lockstep)
        self.env, self.eval_env, self.envs, self.eval_envs = self.stage_sets[stage]
        self.stage = stage
        if isinstance(self.batched, BatchedMLP):
            self.lockstep_envs(self.batched.batch, evaluation=False)

    def close(self) -> None:
        """Release the environments (every stage's)."""
        every = [e for env, ev, envs, evs in self.stage_sets.values() for e in (env, ev, *envs, *evs)]
        for env in {id(e): e for e in every}.values():
            env.close()

    def play(self, jobs: list[EpisodeJob], evaluation: bool) -> list[Episode]:
        """Play episodes: in lockstep for MLP and CNN policies with ``rollout_batch > 1``, one by
        one otherwise (the same numbers either way). Low-rank jobs (:class:`LowRank`) play on
        :attr:`lowrank`, whose base weights the caller has set."""
        batched = self.lowrank if jobs and isinstance(jobs[0].params, LowRank) else self.batched
        if batched is not None and jobs:
            n = balanced_batch(len(jobs), batched.batch)
            return run_lockstep(self.lockstep_envs(n, evaluation), batched.prefix(n), jobs)
        env = self.eval_env if evaluation else self.env
        episodes = []
        for job in jobs:
            assert isinstance(job.params, np.ndarray), "low-rank members play in lockstep only"
            self.policy.set_params(job.params)
            episodes.append(run_episode(env, self.policy, job.seed, job.noise, collect_obs=job.collect_obs))
        return episodes

    def lockstep_envs(self, n: int, evaluation: bool) -> list[Any]:
        """The current stage's first ``n`` lockstep environments (evaluation ones for
        ``evaluation`` on Atari, where they differ), built on first need: a process that never
        plays a task of ``n`` episodes (the master) never builds ``n`` environments. Every episode
        starts from ``reset(seed=...)``, so which environment object plays it does not matter."""
        separate = evaluation and self.eval_env is not self.env
        envs = self.eval_envs if separate else self.envs
        cfg = OmegaConf.create(self.spec.stage_envs[self.stage]) if self.spec.stage_envs else self.env_cfg
        while len(envs) < n:
            envs.append(make_env(cfg, training=not separate))
        return envs[:n]

    def member(self, es: ESState, population: Population, i: int, sign: int) -> np.ndarray | LowRank:
        """Member i played with ``sign``: its factors when :attr:`lowrank` plays it, else its
        dense parameters."""
        if self.factored is not None:
            return LowRank(self.factored.member_factors(es, population, i), sign * self.factored.sigma)
        return self.strategy.member_params(es, population, i, sign)

    def initial_state(self) -> TrainerState:
        """Generation 0, built from the seed alone (the master builds the same)."""
        return initial_state(self.policy, self.strategy, self.spec.seed)

    def sync(self, msg: SyncMessage, snapshot: TrainerState | None) -> TrainerState | None:
        """The state at ``msg.generation``, by replay or snapshot; None if a snapshot is needed."""
        if snapshot is not None:
            self.states = {snapshot.generation: snapshot}
            self.verified.discard(snapshot.generation)
        state = self.states.get(msg.generation)
        if state is None:
            state = self._replay(msg)
            if state is None:
                return None
        if msg.generation not in self.verified:
            if state_digest(state) != msg.digest:
                self.states.clear()
                self.verified.clear()
                return None
            self.verified.add(msg.generation)
        self.states = {g: s for g, s in self.states.items() if g >= msg.generation - 1}
        self.verified = {g for g in self.verified if g in self.states}
        return state

    def _replay(self, msg: SyncMessage) -> TrainerState | None:
        records = {r.generation: r for r in msg.records}
        known = [g for g in self.states if g <= msg.generation]
        if known:
            state = self.states[max(known)]
        elif 0 in records or msg.generation == 0:
            state = self.initial_state()
        else:
            return None
        while state.generation < msg.generation:
            record = records.get(state.generation)
            if record is None:
                return None
            state, _ = advance(self.strategy, state, record)
            self.states[state.generation] = state
        return state


def balanced_batch(n_jobs: int, max_batch: int) -> int:
    """Slots for ``n_jobs`` episodes with at most ``max_batch`` at once, in rounds as full as
    possible: 40 episodes with 32 slots play as 2 rounds of 20, not 32 and then a tail of 8 whose
    forward passes would cost as much per call for a quarter of the steps."""
    rounds = math.ceil(n_jobs / max_batch)
    return max(1, math.ceil(n_jobs / rounds))


def initial_state(policy: Policy, strategy: Strategy, seed: int) -> TrainerState:
    """The trainer state at generation 0: parameters drawn from the run seed, prior obs stats."""
    params = policy.init_params(generator(seed, INIT_PARAMS))
    obs = ObsStats.zeros(int(policy.obs_dim)) if policy.uses_obs_norm else None  # type: ignore[attr-defined]
    return TrainerState(es=strategy.init(params), obs=obs)


_CONTEXTS: OrderedDict[str, RunContext] = OrderedDict()
_MAX_CONTEXTS = 4  # runs whose tasks may interleave on one worker (a sweep sharing a cluster)


@atexit.register
def _release_contexts() -> None:
    """Close every cached context's environments before the interpreter tears modules down.

    ALE's nanobind bindings report each ``ALEInterface`` still alive at shutdown as a leak (a
    screenful of warnings when a Dask worker exits); dropping the environments here avoids that.
    """
    while _CONTEXTS:
        _, ctx = _CONTEXTS.popitem()
        ctx.close()
    gc.collect()


def get_context(spec: RunSpec) -> RunContext:
    """This process's context for ``spec.run_key`` (the few most recently used runs are kept)."""
    ctx = _CONTEXTS.get(spec.run_key)
    if ctx is None:
        keep_large_allocations_on_the_heap()  # whatever a Dask nanny put in this process's env
        if spec.policy.get("kind") == "cnn" or "torch" in sys.modules:  # MLP rollouts need no torch
            import torch

            torch.set_num_threads(spec.torch_threads)
        while len(_CONTEXTS) >= _MAX_CONTEXTS:
            _, old = _CONTEXTS.popitem(last=False)
            old.close()
        ctx = _CONTEXTS[spec.run_key] = RunContext(spec)
    _CONTEXTS.move_to_end(spec.run_key)
    return ctx


def evaluate_chunk(
    spec: RunSpec,
    msg: SyncMessage,
    members: list[int],
    mode: str,
    snapshot: TrainerState | None = None,
    stage: int = 0,
) -> ChunkResult:
    """Evaluate ``members`` at the state ``msg`` names (a Dask task).

    Args:
        spec: the run.
        msg: the generation wanted and how to reach it.
        members: population member indices (``mode="train"``) or evaluation episode indices
            (``mode="eval"``).
        mode: ``"train"``: each member at params +/- sigma*eps_i with action noise, reset seeds
            from (seed, generation, member); ``"eval"``: the noiseless policy on the fixed
            evaluation seeds ``eval_seed + k``, no action noise; ``"eval_stochastic"``: the same
            episodes with Gaussian action noise of the training's std (``algo.action_noise_std``,
            the paper's 0.01; continuous actions only) from the stream (seed, EVAL_ACTIONS,
            generation, k): the policy acting stochastically (``eval.also_stochastic``).
        snapshot: a full state, sent only when the worker reported it could not catch up.
        stage: which stage's environment to play (``spec.stage_envs``; 0 for a run of one stage):
            the stage trained (``"train"``) or the stage evaluated (``"eval"``).
    """
    cpu0 = time.process_time()
    ctx = get_context(spec)
    ctx.select_stage(stage)
    idx = np.asarray(members, dtype=np.int64)
    state = ctx.sync(msg, snapshot)
    if state is None:
        empty = np.zeros((len(idx), 0))
        return ChunkResult(idx, empty, empty, empty, stale=True)
    policy, strategy = ctx.policy, ctx.strategy
    if state.obs is not None:
        policy.set_obs_stats(state.obs.mean, state.obs.std)
    g = state.generation
    if mode in ("eval", "eval_stochastic"):
        std = float(ctx.algo.action_noise_std) if mode == "eval_stochastic" else 0.0
        jobs = [
            EpisodeJob(
                state.es.params,
                spec.eval_seed + int(k),
                (generator(spec.seed, EVAL_ACTIONS, g, int(k)), std) if std > 0 else None,
            )
            for k in idx
        ]
        eps = ctx.play(jobs, evaluation=True)
        return ChunkResult(
            idx,
            np.array([[e.ret] for e in eps]),
            np.array([[e.length] for e in eps]),
            np.array([[e.frames] for e in eps]),
            cpu_s=time.process_time() - cpu0,
        )
    population = strategy.ask(state.es)
    signs = population.signs
    if ctx.lowrank is not None:
        ctx.lowrank.set_base(state.es.params)
    noise_std = float(ctx.algo.action_noise_std)
    collect_p = float(ctx.algo.obs_norm_fraction) if state.obs is not None else 0.0
    jobs = []
    for i in idx:
        reset_seed = derive_seed(spec.seed, ENV_RESET, g, int(i))  # common to both signs of a pair
        collect = collect_p > 0 and generator(spec.seed, OBS_STATS, g, int(i)).random() < collect_p
        for col, sign in enumerate(signs):
            noise = (generator(spec.seed, ACTION_NOISE, g, int(i), col), noise_std) if noise_std else None
            params = ctx.member(state.es, population, int(i), sign)
            jobs.append(EpisodeJob(params, reset_seed, noise, collect))
    eps = ctx.play(jobs, evaluation=False)
    k = len(signs)
    returns = np.array([e.ret for e in eps]).reshape(len(idx), k)
    lengths = np.array([e.length for e in eps]).reshape(len(idx), k)
    frames = np.array([e.frames for e in eps]).reshape(len(idx), k)
    obs: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    for j, e in enumerate(eps):
        if e.obs_total is not None:
            i = int(idx[j // k])
            if i in obs:  # the second episode of a pair
                t, s, c = obs[i]
                obs[i] = (t + e.obs_total, s + e.obs_sumsq, c + e.length)  # type: ignore[operator]
            else:
                obs[i] = (e.obs_total, e.obs_sumsq, float(e.length))  # type: ignore[assignment]
    return ChunkResult(idx, returns, lengths, frames, obs=obs, cpu_s=time.process_time() - cpu0)
