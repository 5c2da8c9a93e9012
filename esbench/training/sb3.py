"""Train an RL baseline as one Dask task, streaming its metrics and checkpoints back to the driver.

``train_baseline(cfg, store, logger, run_key)`` has the signature of ``train_es`` and returns the same
summary keys. The SB3 model runs in ONE process (SB3 seeds and draws from global RNGs, so one run
owns its process), with ``torch.set_num_threads(cfg.torch_threads)``: a single ``esbench run`` on
this machine (``cluster=local``) trains in its own process, which exists for that run alone
(:func:`esbench.runtime.cluster.sole_run_of_process`); otherwise (``cluster=address`` / ``slurm`` /
``processes``, or a library call) the run is one task on a Dask worker of
``esbench.runtime.cluster.dask_client(cfg.cluster)``, streaming back as below. Both give the same
numbers (tests/test_baselines.py).

Streaming design: the task and the driver share a named ``distributed.Queue``. The task puts each
metrics row (a small dict, msgpack-able) on it as soon as it is logged; each checkpoint snapshot is
``scatter``-ed from the task (its bytes stay on the worker and travel worker -> driver directly,
never through the scheduler) and its ``Future`` goes on the queue. The driver pulls in order and does
all writing: rows through the :class:`MetricsLogger` (store, W&B, console) as they come, snapshots
into ``checkpoint.npz`` together with the count of rows received up to that point (queue order makes
the two consistent). So results land only where the driver runs: no shared filesystem is assumed, and
``cluster=address`` with workers on other machines works as the LocalCluster does. Rows carry their
index, so a task that Dask re-runs after a lost worker overwrites rows instead of duplicating them.

Inside a Dask task already (a sweep job of the Dask launcher, :func:`in_dask_task`), the training runs
in-process and writes directly.

Stages (issue #14): :func:`train_process` trains the stages of the run's sequence one after another,
one SB3 model per stage on that stage's environments, each starting from the previous one's
parameters (:func:`carry_over`); evaluation points, boundaries, rows and the summary come from
:class:`esbench.training.sequence_loop.SequenceLoop`, as for ES. The stage-boundary snapshots travel
back with the summary and the driver writes ``snapshots.npz`` when the run completes.

Resume: the driver loads ``checkpoint.npz`` (data only: no code in it runs), checks it once for every
learner (:func:`esbench.training.checkpoint.resume_state`: its kind, its digest, and
that the snapshot parses), cuts ``metrics.csv`` back to the checkpoint's row count and reads those
rows into the logger (:meth:`MetricsLogger.resume`), and sends the snapshot to the task, which
builds the model and environments from the config, overwrites their state with the snapshot's
(:mod:`esbench.training.sb3_checkpoint`) and continues; the result is bit-identical to an uninterrupted
run on the same machine (timing columns aside). A checkpoint that cannot be read stops the run with
one line naming it (:class:`~esbench.tracking.store.RunFileError`).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

# Registers the baselines: a Dask worker running _remote_train imports only this module's chain.
from esbench.baselines import registry as _registry  # noqa: F401
from esbench.baselines.configs import resolve_hparams
from esbench.baselines.evaluation import action_distribution, deterministic_act, evaluate
from esbench.baselines.sb3 import build_model, make_training_env
from esbench.config.eval_protocol import EvalProtocol, eval_protocol
from esbench.envs import make_env
from esbench.measures.distribution import ActionDist
from esbench.runtime.cluster import dask_client, in_dask_task, is_sole_run_of_process
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import OBS_NORM_FILE, SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import resume_state, save_checkpoint
from esbench.training.drift import action_bounds, record_stage_states, write_probes
from esbench.training.init_policy import load_base, record_obs_norm, start_stage, write_obs_norms
from esbench.training.learner import AfterStep, Seeds, StepStats
from esbench.training.loop import run_learner
from esbench.training.ruler import Stage, StageEval, StagePlan, stage_plan, write_snapshots
from esbench.training.sb3_callback import MetricsCallback, Progress, policy_layout, policy_vector
from esbench.training.sb3_checkpoint import SB3_STATE, load_snapshot, optimizers, restore, snapshot
from esbench.training.sb3_init import load_base_policy, obs_norm_of, warm_up_value
from esbench.training.sequence_loop import SequenceLoop
from esbench.utils.layout import ParamLayout

log = logging.getLogger(__name__)

RowSink = Callable[[dict[str, Any]], None]
SnapshotSink = Callable[[bytes], None]
#: The stochastic evaluation beside a deterministic one (``eval.also_stochastic``).
SAMPLED = EvalProtocol("sampled")


def train_baseline(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train the baseline ``cfg.algo.name`` as ``cfg`` says; returns the summary dict."""
    blob = resume_state(store, logger, SB3_STATE) if cfg.resume else None
    if blob is not None:
        progress = load_snapshot(blob).progress
        log.info(
            "resuming %s from its checkpoint (%d rows) at timestep %d, stage %d",
            store.run_id, len(logger.rows), progress.timesteps, progress.stage,
        )  # fmt: skip
    sink = _DriverSink(store, logger)
    if in_dask_task() or (cfg.cluster.kind == "local" and is_sole_run_of_process()):
        # A sweep's job already runs in a worker; a single `esbench run` on this machine owns its
        # process (it ends with the run), so the model trains here: no worker to start.
        result = train_process(cfg, blob, sink.row, sink.snapshot)
    else:
        cluster_cfg = cfg.cluster
        if cluster_cfg.kind == "local":  # one run, one process: do not start a worker per core
            cluster_cfg = OmegaConf.merge(cluster_cfg, {"n_workers": 1})
        with dask_client(cluster_cfg, quiet=not cfg.tracker.console) as client:
            result = _train_on_cluster(client, cfg, blob, sink)
    snaps = result.pop("snapshots")  # written where the driver runs, as every results file is
    write_snapshots(store.path(SNAPSHOTS_FILE), snaps.params, snaps.stages, snaps.boundaries, snaps.layout)
    write_stage_states(store.path(STAGE_STATES_FILE), snaps.states)
    write_probes(store.dir, snaps.probes, snaps.probe_ends, snaps.stochastic, snaps.bounds)
    write_obs_norms(store.path(OBS_NORM_FILE), snaps.obs_norms)
    return result


class _DriverSink:
    """Driver side: rows into the logger, snapshots into the store with the count of rows so far."""

    def __init__(self, store: RunStore, logger: MetricsLogger) -> None:
        self.store = store
        self.logger = logger

    def row(self, row: dict[str, Any]) -> None:
        row = dict(row)
        del self.logger.rows[int(row.pop("row_index")) :]  # a re-run task re-sends rows: overwrite
        self.logger.record_many(row)
        self.logger.dump()

    def snapshot(self, blob: bytes) -> None:
        self.logger.sync()  # the file holds exactly the rows counted (re-sent ones rewritten)
        save_checkpoint(self.store, SB3_STATE, blob, len(self.logger.rows))


def _train_on_cluster(client: Any, cfg: DictConfig, blob: bytes | None, sink: _DriverSink) -> dict[str, Any]:
    """Submit the run as one task; handle its queue messages until it finishes."""
    from distributed import Future, Queue, wait

    queue = Queue(f"esbench-{uuid.uuid4().hex}", client=client)
    state = client.scatter(blob) if blob is not None else None
    future = client.submit(_remote_train, cfg, state, queue.name, pure=False)

    def handle(msg: Any) -> None:
        if isinstance(msg, Future):
            sink.snapshot(msg.result())
            msg.release()
        else:
            sink.row(msg)

    while True:
        pending = queue.qsize()
        for _ in range(pending):
            handle(queue.get())
        if pending == 0:
            if future.done() and queue.qsize() == 0:  # everything the task put before it returned
                break
            with contextlib.suppress(TimeoutError):
                wait([future], timeout=0.25)
    return future.result()


def _remote_train(cfg: DictConfig, blob: bytes | None, queue_name: str) -> dict[str, Any]:
    """The Dask task: train, putting rows and snapshot futures on the queue."""
    from distributed import Queue, get_client

    client = get_client()
    queue = Queue(queue_name, client=client)

    def row(r: dict[str, Any]) -> None:
        queue.put(r)

    def snap(b: bytes) -> None:
        queue.put(client.scatter(b))

    return train_process(cfg, blob, row, snap)


@dataclass
class Snapshots:
    """The stage-boundary snapshots a run returns to its driver (see ``write_snapshots``)."""

    params: list[np.ndarray]
    stages: list[str]
    boundaries: list[int]
    layout: ParamLayout
    states: list[StageStates]  # for stage_states.npz (esbench.training.drift)
    probes: list[StageStates] = field(default_factory=list)  # probes.npz, probe_states.npz
    probe_ends: list[list[ActionDist]] = field(default_factory=list)
    stochastic: bool = False  # the policy samples its actions (actor-critic): its KL is defined
    bounds: tuple[np.ndarray, np.ndarray] | None = None  # the Box action bounds
    obs_norms: dict[str, dict[str, Any]] = field(default_factory=dict)  # obs_norm.npz


def stochastic_policy(model: BaseAlgorithm) -> bool:
    """Whether ``model`` samples its actions from a distribution while it trains (the
    actor-critic policies of A2C, PPO, TRPO: ``get_distribution``), not a Q-network's argmax."""
    return getattr(model.policy, "get_distribution", None) is not None


def stage_config(cfg: DictConfig, stage: Stage) -> DictConfig:
    """``cfg`` with the stage's env in place of the run's (what ``make_training_env`` and
    ``build_model`` read)."""
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    data["env"] = dict(stage.env)
    return OmegaConf.create(data)


def build_stage(cfg: DictConfig, hp: dict[str, Any], stage: Stage) -> tuple[BaseAlgorithm, VecEnv]:
    """A fresh model on stage ``stage``'s training environments, seeded with ``cfg.seed`` (SB3
    seeds its global RNGs on construction, so every stage starts its streams from the run seed)."""
    stage_cfg = stage_config(cfg, stage)
    venv = make_training_env(stage_cfg, hp)
    model = build_model(stage_cfg, hp, venv)  # a resumed run too: the snapshot holds state, not structure
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model, venv


def carry_over(old: BaseAlgorithm, new: BaseAlgorithm, plan: StagePlan) -> None:
    """Start ``new`` (the next stage's model) where ``old`` ended: its policy's parameters always
    (actor, critic and DQN's target network), the optimizers' state unless
    ``sequence.reset_optimizer``, the observation statistics of VecNormalize unless
    ``sequence.reset_obs_norm``. The rest is the new stage's own and fresh, as in Continual World
    between tasks: reward normalization, a replay buffer, DQN's exploration schedule and
    ``learning_starts``, learning-rate schedules (over the stage's budget)."""
    new.policy.load_state_dict(old.policy.state_dict())
    if not plan.reset_optimizer:
        before = optimizers(old)
        for name, opt in optimizers(new).items():
            opt.load_state_dict(before[name].state_dict())
    if not plan.reset_obs_norm:
        old_env, new_env = old.get_env(), new.get_env()
        old_norm = unwrap_vec_normalize(old_env) if old_env is not None else None
        new_norm = unwrap_vec_normalize(new_env) if new_env is not None else None
        if old_norm is not None and new_norm is not None:
            new_norm.obs_rms = copy.deepcopy(old_norm.obs_rms)


def train_process(
    cfg: DictConfig, blob: bytes | None, emit_row: RowSink, emit_snapshot: SnapshotSink
) -> dict[str, Any]:
    """Train in this process (from ``blob``, a snapshot, when given) and return the summary.

    Stage after stage of the run's plan (:func:`esbench.training.ruler.stage_plan`), driven by
    :func:`esbench.training.loop.run_learner` with an :class:`SB3Learner`: an evaluation point at
    timestep 0, then ``learn`` for the stage's budget with the metrics callback handing every step
    to the loop, a point at the end of the stage, and a new model for the next stage that starts
    from this one's parameters (:func:`carry_over`); a snapshot is emitted at every boundary, so a
    run killed in stage k resumes inside stage k.
    """
    torch.set_num_threads(int(cfg.torch_threads))
    plan = stage_plan(cfg)
    hp = resolve_hparams(cfg)
    base = load_base(cfg) if blob is None else None
    if blob is not None:
        first = load_snapshot(blob).progress.stage
    else:
        first = start_stage(cfg, base, plan) if base is not None else 0
    model, venv = build_stage(cfg, hp, plan.stages[first])
    if blob is not None:
        progress = restore(blob, model)
    else:
        progress = Progress(next_checkpoint_at=int(cfg.checkpoint_every))
        if base is not None:  # the base's policy, then the value network fitted on its rollouts
            load_base_policy(model, base, cfg)
            progress.base = warm_up_value(model, cfg)
    eval_envs = [make_env(stage.env_cfg(), training=False) for stage in plan.stages]

    def emit(rows: list[dict[str, Any]], point: Any) -> None:
        del point
        for row in rows:
            emit_row({**row, "row_index": progress.rows})
            progress.rows += 1

    def build(loop: SequenceLoop) -> SB3Learner:
        return SB3Learner(cfg, hp, loop, model, venv, eval_envs, emit_snapshot, restored=blob is not None)

    learner: SB3Learner | None = None
    try:
        summary, learner = run_learner(
            cfg, progress, build, resumed_at=progress.timesteps if blob is not None else None, emit=emit,
            cpu="process", checkpoints=False, base=base,
            on_boundary=lambda ln: record_obs_norm(ln.p, plan.names, obs_norm_of(ln.model)),
        )  # fmt: skip
    finally:
        for env in eval_envs:
            env.close()
        (learner.venv if learner is not None else venv).close()
    model = learner.model
    return {
        **summary,
        "workers": 1,
        "updates": int(getattr(model, "_n_updates", 0)),
        "hyperparameters": {k: v for k, v in hp.items() if k != "name"},
        "snapshots": Snapshots(
            progress.snapshots,
            plan.names,
            progress.boundaries,
            policy_layout(model),
            progress.stage_states,
            progress.probes,
            progress.probe_ends,
            stochastic_policy(model),
            action_bounds(model.action_space),
            progress.obs_norms,
        ),
    }


class SB3Learner:
    """The SB3 :class:`~esbench.training.learner.Learner`: one model per stage, trained by SB3's
    ``learn`` with a :class:`MetricsCallback` that hands every environment step to the loop.

    Args:
        cfg: The run config.
        hp: The resolved hyperparameters.
        loop: The run's sequence loop; its progress is a :class:`Progress`.
        model: The current stage's model (restored from a snapshot when resuming).
        venv: Its training environments.
        eval_envs: One evaluation env per stage of the plan.
        emit_snapshot: Receives each snapshot (bytes).
        restored: The model was restored from a snapshot (its first ``learn`` continues the count).
    """

    def __init__(
        self,
        cfg: DictConfig,
        hp: dict[str, Any],
        loop: SequenceLoop,
        model: BaseAlgorithm,
        venv: VecEnv,
        eval_envs: list[Any],
        emit_snapshot: SnapshotSink,
        restored: bool,
    ) -> None:
        assert isinstance(loop.p, Progress)
        self.cfg, self.hp, self.loop, self.p = cfg, hp, loop, loop.p
        self.model, self.venv, self.eval_envs = model, venv, eval_envs
        self.emit_snapshot = emit_snapshot
        self.restored = restored
        self.protocol = eval_protocol(cfg, family="rl")

    # --- a step -----------------------------------------------------------------------------------
    def train(self, after_step: AfterStep) -> None:
        """``learn`` for what remains of the stage's budget (the callback hands the loop every
        environment step; the loop stops ``learn`` at the target), then the step that ends the
        stage, whose point evaluates the parameters the last update left."""
        if not after_step(StepStats(columns=self.columns, row=False)):
            return
        remaining = self.loop.stage.timesteps - self.model.num_timesteps
        if remaining > 0:
            callback = MetricsCallback(self.cfg, self.p, after_step, self.columns, self.checkpoint)
            self.model.learn(remaining, callback=callback, reset_num_timesteps=not self.restored)
        self.restored = False
        after_step(StepStats(columns=self.columns, row=False, ends_stage=True))

    def columns(self) -> dict[str, Any]:
        """The columns of a point's row: the training episodes finished since the last one (then
        forgotten), the updates so far, the parameters' norm."""
        p = self.p
        train = {
            "train_return_mean": float(np.mean(p.returns)) if p.returns else math.nan,
            "train_return_max": float(np.max(p.returns)) if p.returns else math.nan,
            "nonfinite_members": 0,
            "grad_norm": math.nan,
            "param_norm": float(np.linalg.norm(self.params().astype(np.float64))),
            "rl/n_updates": int(getattr(self.model, "_n_updates", 0)),
        }
        p.returns = []
        return train

    def begin_stage(self, stage: Stage) -> None:
        """A fresh model on the new stage's environments, starting where the last one ended
        (:func:`carry_over`)."""
        self.p.episode_raw = []
        model, venv = build_stage(self.cfg, self.hp, stage)
        carry_over(self.model, model, self.loop.plan)
        self.venv.close()
        self.model, self.venv = model, venv

    def checkpoint(self) -> None:
        """Emit a snapshot of the model, its environments, the RNGs and the counters."""
        self.loop.clock.tick()
        self.emit_snapshot(snapshot(self.model, self.p))

    # --- an evaluation point ----------------------------------------------------------------------
    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        """Stage ``j`` on the evaluation seeds ``eval.seed + first + k``, acting as
        ``eval.policy`` says (:mod:`esbench.baselines.evaluation`), or with actions sampled from
        the policy (``stochastic``: SB3's ``deterministic=False``, how the paper's TRPO targets
        were measured), on the evaluation action streams (run seed, timestep, episode)."""
        episodes = int(self.cfg.eval.episodes if seeds.episodes is None else seeds.episodes)
        mean, std, steps = evaluate(
            self.model,
            self.eval_envs[j],
            int(self.cfg.eval.seed),
            episodes,
            self._vec_normalize(),
            protocol=SAMPLED if seeds.stochastic else self.protocol,
            run_seed=int(self.cfg.seed),
            timestep=self.p.timesteps,
            first=int(seeds.first),
        )
        return StageEval(self.loop.plan.stages[j].name, mean, std, steps)

    def _vec_normalize(self) -> Any:
        """The model's VecNormalize (None without one): its observation statistics."""
        env = self.model.get_env()
        assert env is not None
        return unwrap_vec_normalize(env)

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The current policy's action distributions on raw observations (its VecNormalize)."""
        return action_distribution(self.model, states, self._vec_normalize())

    def record_states(self) -> StageStates:
        """The states the current (deterministic) policy visits on the stage it trains, on the
        run's first evaluation seeds (:func:`esbench.training.drift.record_stage_states`)."""
        act = deterministic_act(self.model, self._vec_normalize())
        return record_stage_states(
            self.loop.stage.name, self.eval_envs[self.p.stage], act, self.distribution,
            int(self.cfg.eval.seed), int(self.cfg.eval.episodes),
        )  # fmt: skip

    def params(self) -> np.ndarray:
        """The policy's parameters (:func:`policy_vector`)."""
        return policy_vector(self.model)
