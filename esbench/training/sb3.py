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
from esbench.baselines.sb3 import build_model, make_training_env
from esbench.config.schema import stop_at_return
from esbench.envs import make_env
from esbench.measures.distribution import ActionDist
from esbench.runtime.cluster import dask_client, in_dask_task, is_sole_run_of_process
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import resume_state, save_checkpoint
from esbench.training.drift import action_bounds, write_probes
from esbench.training.loop import walk_stages
from esbench.training.ruler import (
    Confirmation,
    Counters,
    Stage,
    StageEval,
    StagePlan,
    stage_plan,
    write_snapshots,
)
from esbench.training.sb3_callback import MetricsCallback, Progress, policy_layout, policy_vector
from esbench.training.sb3_checkpoint import SB3_STATE, load_snapshot, optimizers, restore
from esbench.training.sequence_loop import SequenceLoop
from esbench.utils.layout import ParamLayout

log = logging.getLogger(__name__)

RowSink = Callable[[dict[str, Any]], None]
SnapshotSink = Callable[[bytes], None]


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

    Stage after stage of the run's plan (:func:`esbench.training.ruler.stage_plan`), walked by
    :func:`esbench.training.loop.walk_stages` with an :class:`SB3Learner`: an evaluation point at
    timestep 0, then ``learn`` for the stage's budget with the metrics callback taking the points
    in between, a point at the end of the stage, and a new model for the next stage that starts
    from this one's parameters (:func:`carry_over`); a snapshot is emitted at every boundary, so a
    run killed in stage k resumes inside stage k.
    """
    torch.set_num_threads(int(cfg.torch_threads))
    plan = stage_plan(cfg)
    hp = resolve_hparams(cfg)
    interval, every = int(cfg.eval.interval_timesteps), int(cfg.checkpoint_every)
    first = load_snapshot(blob).progress.stage if blob is not None else 0
    model, venv = build_stage(cfg, hp, plan.stages[first])
    if blob is not None:
        progress = restore(blob, model)
        progress.resumed_from = [*progress.resumed_from, progress.timesteps]
    else:
        progress = Progress(next_eval_at=interval, next_checkpoint_at=every)
        progress.snapshots = [policy_vector(model)]
    loop = SequenceLoop(
        plan,
        progress,
        interval,
        stop_at_return(cfg),
        Confirmation.from_config(cfg),
        bool(cfg.eval.also_stochastic),
        probes=True,
    )
    eval_envs = [make_env(stage.env_cfg(), training=False) for stage in plan.stages]
    learner = SB3Learner(
        cfg, hp, loop, model, venv, eval_envs, emit_row, emit_snapshot, restored=blob is not None
    )
    try:
        walk_stages(loop, learner)
    finally:
        learner.close()
    model = learner.model
    counters = Counters(
        progress.points, progress.timesteps, progress.frames, progress.episodes, progress.wall_clock_s,
        progress.cpu_s, progress.eval_timesteps, 1,
    )  # fmt: skip
    return {
        **loop.summary(counters, policy_vector(model)),
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
        ),
    }


class SB3Learner:
    """The SB3 :class:`~esbench.training.learner.Learner`: one model per stage, trained by SB3's
    ``learn`` with a :class:`~esbench.training.sb3_callback.MetricsCallback` that counts, takes
    the points inside a stage and emits snapshots between rollouts.

    Args:
        cfg: The run config.
        hp: The resolved hyperparameters (:func:`~esbench.baselines.configs.resolve_hparams`).
        loop: The run's sequence loop; its progress is a :class:`Progress`.
        model: The current stage's model (restored from a snapshot when resuming).
        venv: Its training environments.
        eval_envs: One evaluation env per stage of the plan.
        emit_row: Receives each finished row.
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
        emit_row: RowSink,
        emit_snapshot: SnapshotSink,
        restored: bool,
    ) -> None:
        assert isinstance(loop.p, Progress)
        self.cfg, self.hp, self.loop, self.p = cfg, hp, loop, loop.p
        self.model, self.venv, self.eval_envs = model, venv, eval_envs
        self.emit_row, self.emit_snapshot = emit_row, emit_snapshot
        self.restored = restored
        self.cb = self._callback()

    def _callback(self) -> MetricsCallback:
        cb = MetricsCallback(self.cfg, self.loop, self.eval_envs, self.emit_row, self.emit_snapshot)
        cb.init_callback(self.model)
        return cb

    # --- the walk ---------------------------------------------------------------------------------
    def first_point(self) -> None:
        """The point at timestep 0: the untrained policy."""
        self.cb.evaluation_point()
        self.cb.clock()

    def train_stage(self) -> None:
        """``learn`` for what remains of the stage's budget (the callback takes the points and
        stops early at the target), then the point that ends the stage, with the parameters its
        last update left."""
        remaining = self.loop.stage.timesteps - self.model.num_timesteps
        if remaining > 0:
            self.model.learn(remaining, callback=self.cb, reset_num_timesteps=not self.restored)
        self.restored = False
        if self.loop.running:
            self.cb.evaluation_point(stage_end=True)
        self.cb.clock()

    def on_stage_end(self) -> None:
        """Nothing: the snapshots travel back with the summary (the driver writes them)."""

    def on_stage_begin(self, stage: Stage) -> None:
        """A fresh model on the new stage's environments, starting where the last one ended
        (:func:`carry_over`)."""
        self.p.episode_raw = []
        model, venv = build_stage(self.cfg, self.hp, stage)
        carry_over(self.model, model, self.loop.plan)
        self.venv.close()
        self.model, self.venv = model, venv
        self.cb = self._callback()

    def checkpoint(self) -> None:
        """Emit a snapshot of the model, its environments, the RNGs and the counters."""
        self.cb.checkpoint()

    def close(self) -> None:
        """Close the evaluation and training environments."""
        for env in self.eval_envs:
            env.close()
        self.venv.close()

    # --- an evaluation point ----------------------------------------------------------------------
    def evaluate_stage(self, j: int) -> StageEval:
        """The current policy on stage ``j`` (:meth:`MetricsCallback.evaluate_stage`)."""
        return self.cb.evaluate_stage(j)

    def confirm_stage(self, j: int, first: int, episodes: int) -> StageEval:
        """Stage ``j`` on a confirmation's seeds (:meth:`MetricsCallback.confirm_stage`)."""
        return self.cb.confirm_stage(j, first, episodes)

    def evaluate_stochastic(self, j: int) -> StageEval:
        """Stage ``j``, the policy sampled (:meth:`MetricsCallback.evaluate_stochastic`)."""
        return self.cb.evaluate_stochastic(j)

    def record_states(self) -> StageStates:
        """The states the current policy visits on its stage (:meth:`MetricsCallback.record_states`)."""
        return self.cb.record_states()

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The current policy's action distributions (:meth:`MetricsCallback.distribution`)."""
        return self.cb.distribution(states)

    def params(self) -> np.ndarray:
        """The policy's parameters (:func:`policy_vector`)."""
        return policy_vector(self.model)
