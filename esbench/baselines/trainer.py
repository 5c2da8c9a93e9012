"""Train an RL baseline as one Dask task, streaming its metrics and checkpoints back to the driver.

``train_baseline(cfg, store, logger, run_key)`` has the signature of ``train_es`` and returns the same
summary keys. The SB3 model runs in ONE process (SB3 seeds and draws from global RNGs, so one run
owns its process): a Dask worker of ``esbench.runtime.cluster.dask_client(cfg.cluster)`` (a
LocalCluster of one single-threaded worker by default; ``cluster=address`` / ``slurm`` alike), with
``torch.set_num_threads(cfg.torch_threads)``.

Streaming design: the task and the driver share a named ``distributed.Queue``. The task puts each
metrics row (a small dict, msgpack-able) on it as soon as it is logged; each checkpoint snapshot is
``scatter``-ed from the task (its bytes stay on the worker and travel worker -> driver directly,
never through the scheduler) and its ``Future`` goes on the queue. The driver pulls in order and does
all writing: rows through the :class:`MetricsLogger` (store, W&B, console) as they come, snapshots
into ``checkpoint.npz`` together with the rows received up to that point (queue order makes the two
consistent). So results land only where the driver runs: no shared filesystem is assumed, and
``cluster=address`` with workers on other machines works as the LocalCluster does. Rows carry their
index, so a task that Dask re-runs after a lost worker overwrites rows instead of duplicating them.

Inside a Dask task already (a sweep job of the Dask launcher, :func:`in_dask_task`), the training runs
in-process and writes directly.

Resume: the driver loads ``checkpoint.npz`` (data only: no code in it runs), checks it (digest, and
that the snapshot parses), puts the rows back into the logger and sends the snapshot to the task,
which builds the model and environments from the config, overwrites their state with the snapshot's
(:mod:`esbench.baselines.checkpoint`) and continues; the result is bit-identical to an uninterrupted
run on the same machine (timing columns aside). A checkpoint that cannot be read stops the run with
one line naming it (:class:`~esbench.tracking.store.RunFileError`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

# Registers the baselines: a Dask worker running _remote_train imports only this module's chain.
from esbench.baselines import registry as _registry  # noqa: F401
from esbench.baselines.callback import MetricsCallback, Progress, policy_vector
from esbench.baselines.checkpoint import (
    CHECKPOINT_TYPES,
    BaselineCheckpoint,
    SnapshotMismatch,
    digest,
    load_snapshot,
    restore,
)
from esbench.baselines.configs import resolve_hparams
from esbench.baselines.sb3 import build_model, make_training_env
from esbench.envs import make_env, resolved_env_id
from esbench.runtime.cluster import dask_client, in_dask_task
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.utils.seeding import sha256_array
from esbench.utils.statefile import StateFileError

log = logging.getLogger(__name__)

RowSink = Callable[[dict[str, Any]], None]
SnapshotSink = Callable[[bytes], None]


def train_baseline(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train the baseline ``cfg.algo.name`` as ``cfg`` says; returns the summary dict."""
    blob = None
    if cfg.resume and store.has_checkpoint:
        ckpt = store.load_checkpoint(CHECKPOINT_TYPES)
        if not isinstance(ckpt, BaselineCheckpoint) or not isinstance(ckpt.state, bytes):
            raise store.checkpoint_error("not a baseline checkpoint")
        if digest(ckpt.state) != ckpt.digest:
            raise store.checkpoint_error("its snapshot does not match its digest")
        try:
            load_snapshot(ckpt.state)  # fail here, in one line, rather than inside the Dask task
        except (StateFileError, SnapshotMismatch) as e:
            raise store.checkpoint_error(f"its snapshot: {e}") from None
        blob = ckpt.state
        logger.rows = list(ckpt.rows)
        log.info("resuming %s from its checkpoint (%d rows)", store.run_id, len(ckpt.rows))
    sink = _DriverSink(store, logger)
    if in_dask_task():
        return train_process(cfg, blob, sink.row, sink.snapshot)
    cluster_cfg = cfg.cluster
    if cluster_cfg.kind == "local":  # one run, one process: do not start a worker per core
        cluster_cfg = OmegaConf.merge(cluster_cfg, {"n_workers": 1})
    with dask_client(cluster_cfg, quiet=not cfg.tracker.console) as client:
        return _train_on_cluster(client, cfg, blob, sink)


class _DriverSink:
    """Driver side: rows into the logger, snapshots into the store with the rows so far."""

    def __init__(self, store: RunStore, logger: MetricsLogger) -> None:
        self.store = store
        self.logger = logger

    def row(self, row: dict[str, Any]) -> None:
        del self.logger.rows[int(row["generation"]) :]  # a re-run task re-sends rows: overwrite
        self.logger.record_many(row)
        self.logger.dump()

    def snapshot(self, blob: bytes) -> None:
        ckpt = BaselineCheckpoint(blob, digest(blob), list(self.logger.rows))
        self.store.save_checkpoint(ckpt, CHECKPOINT_TYPES)


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


def train_process(
    cfg: DictConfig, blob: bytes | None, emit_row: RowSink, emit_snapshot: SnapshotSink
) -> dict[str, Any]:
    """Train in this process (from ``blob``, a snapshot, when given) and return the summary."""
    torch.set_num_threads(int(cfg.torch_threads))
    hp = resolve_hparams(cfg)
    venv = make_training_env(cfg, hp)
    budget = int(cfg.budget.timesteps)
    model = build_model(cfg, hp, venv)  # a resumed run too: the snapshot holds state, not structure
    if blob is None:
        interval, every = int(cfg.eval.interval_timesteps), int(cfg.checkpoint_every)
        progress = Progress(next_eval_at=interval, next_checkpoint_at=every)
    else:
        progress = restore(blob, model)
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    task = resolved_env_id(cfg.env)
    eval_env = make_env(cfg.env, training=False)
    callback = MetricsCallback(cfg, progress, eval_env, emit_row, emit_snapshot, task)
    try:
        if not progress.finished:
            remaining = budget - model.num_timesteps
            if remaining > 0:
                model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=blob is None)
            else:
                callback.init_callback(model)
            if progress.last_eval_timesteps != progress.timesteps:
                callback.log_row(evaluate_now=True)  # the final evaluation, unless one just happened
            progress.finished = True
            callback.checkpoint()
    finally:
        eval_env.close()
        venv.close()
    return {
        "final_eval_return": progress.last_eval[0],
        "best_eval_return": progress.best_eval if math.isfinite(progress.best_eval) else math.nan,
        "total_timesteps": progress.timesteps,
        "total_frames": progress.frames,
        "total_episodes": progress.episodes,
        "wall_clock_s": progress.wall_clock_s,
        "cpu_s": progress.cpu_s,
        "steps_per_s": progress.timesteps / max(progress.wall_clock_s, 1e-9),
        "workers": 1,
        "params_sha256": sha256_array(policy_vector(model)),
        "updates": int(getattr(model, "_n_updates", 0)),
        "hyperparameters": {k: v for k, v in hp.items() if k != "name"},
    }
