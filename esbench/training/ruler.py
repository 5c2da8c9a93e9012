"""The one ruler in code: stages, the evaluation schedule, metrics rows and the summary, for ES and RL.

DESIGN.md promise 3 says ES and RL are measured on one ruler; issue #14 part 3 asks that the code
which builds a metrics row, a summary and the evaluation schedule exist once, so the two families
cannot drift apart. Both trainers (:mod:`esbench.training.es`, :mod:`esbench.baselines`)
keep only their own hooks: "train on stage k until ..." and "evaluate the current parameters on
stage j". Everything else they write goes through here, in the order
:class:`esbench.training.sequence_loop.SequenceLoop` uses it:

* :func:`stage_plan`: the stages a run trains, one after another (a run without a sequence is a
  sequence of one stage, named after its env id; ``sequence.only_stage=k`` keeps stage k alone, a
  reference run trained from scratch). Stage budgets are in timesteps (``sequence.stage_timesteps``
  overrides every stage's but a stage of budget 0, the prior of ``env=lm``); a sequence ignores
  ``budget.timesteps`` and ES's ``budget.generations``.
* The evaluation schedule: a point at timestep 0 (the untrained policy, issue #15), then at the
  first training step at or past every multiple of ``eval.interval_timesteps`` (cumulative over
  the sequence), and at the end of every stage (:func:`next_eval_at`, :meth:`Stage.done`).
* The rows of an evaluation point (:func:`point_rows`): one per evaluated stage, every stage of the
  plan evaluated at every point on the run's fixed evaluation seeds, ``train_task`` the stage
  trained, ``eval_task`` the stage evaluated, cumulative counters on every row and the step's
  training statistics on the row that evaluates the stage being trained (the data model of
  :mod:`esbench.analysis.retention`). A step without evaluation is one row (:func:`step_row`).
* Stop at a target (issue #15): a run ends at the first evaluation of the stage it trains at or
  above ``budget.stop_at_return`` (:func:`target_reached`) that a confirmation evaluation on fresh
  seeds also reaches (:class:`Confirmation`: ``budget.confirm_episodes`` episodes, at least 10, on
  evaluation seeds disjoint from the regular ones and from every earlier confirmation's); an
  unconfirmed point is recorded as such and training goes on. A sequence of several stages refuses
  a target (:func:`check_stop_at_return_with_sequence`: which stage would it stop?).
* Drift at every evaluation point (:func:`drift_at_point`, :mod:`esbench.training.drift`): of the
  parameters from the last stage-boundary snapshot, and of the policy on the states each ended
  stage's final policy visited there (recorded when the stage ends: :func:`stage_end_states`).
* The summary (:func:`summary`), with the stage names, boundaries ``T_k`` and per-stage wall-clock
  of a sequence, and the parameter snapshots at the stage boundaries (:func:`write_snapshots`,
  ``snapshots.npz``, the layout :mod:`esbench.tracking.schema` lists).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.schema import stop_at_return
from esbench.config.sequence import stage_env_configs
from esbench.config.validate import register_check
from esbench.envs import resolved_env_id
from esbench.tracking.schema import SNAPSHOT_DRIFT_FILE
from esbench.tracking.snapshot_drift import SnapshotDrift, write_snapshot_drift
from esbench.tracking.stage_states import StageStates
from esbench.training.drift import DistributionFn, drift_columns, kl_columns
from esbench.utils.io import atomic_write_bytes
from esbench.utils.layout import ParamLayout
from esbench.utils.seeding import sha256_array


@dataclass(frozen=True)
class Stage:
    """One stage a run trains.

    Attributes:
        index: Position in the sequence (``sequence.stages[index]``; 0 without a sequence).
        name: The stage's name (the env id without a sequence): ``train_task`` / ``eval_task``.
        env: The stage's full, resolved env config as plain data (picklable, msgpack-able).
        timesteps: The stage's training budget in environment steps.
    """

    index: int
    name: str
    env: dict[str, Any]
    timesteps: int

    def env_cfg(self) -> DictConfig:
        """The env config as ``make_env`` takes it."""
        return OmegaConf.create(self.env)

    def done(self, timesteps: int, stage_start: int) -> bool:
        """Whether the stage's budget is spent: ``timesteps - stage_start >= self.timesteps``
        (timesteps counted from where the stage actually started, so a stage trains its whole
        budget even when the one before overshot its own)."""
        return timesteps - stage_start >= self.timesteps


@dataclass(frozen=True)
class StagePlan:
    """The stages of a run, in training order, and what carries over between them.

    Attributes:
        sequence: ``sequence.name`` (``none`` without a sequence).
        stages: At least one.
        reset_optimizer: Start every stage after the first with a fresh optimizer state.
        reset_obs_norm: ... and with fresh observation-normalization statistics.
        only_stage: ``sequence.only_stage`` (a reference run), or None.
    """

    sequence: str
    stages: tuple[Stage, ...]
    reset_optimizer: bool = True
    reset_obs_norm: bool = True
    only_stage: int | None = None

    @property
    def names(self) -> list[str]:
        """Stage names in training order."""
        return [s.name for s in self.stages]

    @property
    def total_timesteps(self) -> int:
        """The sum of the stage budgets (what a console progress bar counts to)."""
        return sum(s.timesteps for s in self.stages)

    @property
    def is_sequence(self) -> bool:
        """More than one stage."""
        return len(self.stages) > 1


def recorded_pretraining(cfg: DictConfig, plan: StagePlan) -> int:
    """Timesteps a run records for a stage trained before it: on ``env=lm``, a sequence whose first
    stage has budget 0 records the task-A pretraining as that stage (``pretrain.steps x
    pretrain.batch_size`` training sequences, :mod:`esbench.training.lm`); 0 for every other run."""
    if str(cfg.env.kind) != "lm" or not plan.is_sequence or plan.stages[0].timesteps != 0:
        return 0
    pretrain = cfg.lm.pretrain
    return int(pretrain.steps) * int(pretrain.batch_size)


def _plain(node: DictConfig) -> dict[str, Any]:
    """A config node as plain, resolved data."""
    data = OmegaConf.to_container(node, resolve=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def stage_plan(cfg: DictConfig) -> StagePlan:
    """The stages ``cfg`` trains (see the module docstring)."""
    seq = OmegaConf.select(cfg, "sequence", default=None)
    stages = list(seq.stages) if seq is not None and seq.stages else []
    if not stages:
        only = Stage(0, resolved_env_id(cfg.env), _plain(cfg.env), int(cfg.budget.timesteps))
        return StagePlan("none", (only,))
    assert seq is not None
    override = seq.stage_timesteps
    plan = []
    for k, env_cfg in enumerate(stage_env_configs(cfg)):
        own = int(stages[k].timesteps)  # 0: trained before the run (env=lm's prior); kept
        budget = int(override) if override is not None and own > 0 else own
        plan.append(Stage(k, str(stages[k].name), _plain(env_cfg), budget))
    only_stage = None if seq.only_stage is None else int(seq.only_stage)
    if only_stage is not None:
        plan = [plan[only_stage]]
    return StagePlan(
        str(seq.name),
        tuple(plan),
        reset_optimizer=bool(seq.reset_optimizer),
        reset_obs_norm=bool(seq.reset_obs_norm),
        only_stage=only_stage,
    )


@register_check
def check_stop_at_return_with_sequence(cfg: DictConfig) -> None:
    """A target score with a sequence of several stages is refused before any work: stopping the
    whole sequence at stage 0's target would leave the later stages untrained, and a target is a
    score on one environment."""
    if OmegaConf.select(cfg, "budget", default=None) is None or "env" not in cfg:
        return
    stages = OmegaConf.select(cfg, "sequence.stages", default=None) or []
    only = OmegaConf.select(cfg, "sequence.only_stage", default=None)
    if len(stages) > 1 and only is None and stop_at_return(cfg) is not None:
        raise ConfigError(
            f"budget.stop_at_return={stop_at_return(cfg)} with sequence={cfg.sequence.name} "
            f"({len(stages)} stages); allowed: no target for a sequence (budget.stop_at_return=null), "
            "or one stage of it (sequence.only_stage=k)"
        )


# --- the evaluation schedule ------------------------------------------------------------------


def next_eval_at(timesteps: int, interval: int) -> int:
    """The next scheduled evaluation after one at ``timesteps``: the first multiple of
    ``interval`` strictly past it (the schedule is cumulative over the sequence)."""
    return (int(timesteps) // int(interval) + 1) * int(interval)


def eval_due(timesteps: int, scheduled: int, stage_done: bool) -> bool:
    """Whether a training step that reached ``timesteps`` ends with an evaluation point: the
    schedule says so, or the stage ended (every stage ends with a point)."""
    return stage_done or timesteps >= scheduled


def target_reached(target: float | None, eval_return: float) -> bool:
    """Whether an evaluation of the stage being trained reaches ``budget.stop_at_return``."""
    return target is not None and math.isfinite(eval_return) and eval_return >= target


#: The fewest confirmation episodes a target stop accepts (``budget.confirm_episodes``).
MIN_CONFIRM_EPISODES = 10


@dataclass(frozen=True)
class Confirmation:
    """How a point that reaches the target is confirmed before the run stops.

    A regular evaluation is a handful of episodes on the same fixed seeds at every point; the first
    point that lands above the target is partly selected for its luck on those seeds. Before a run
    stops there, the same parameters play ``episodes`` more episodes on fresh seeds, and the run
    stops only if their mean reaches the target too.

    Confirmation ``c`` (0, 1, ... in the order a run takes them) plays the evaluation seeds
    ``eval.seed + first(c) + k`` for ``k < episodes``, with ``first(c) = eval_episodes + c *
    episodes``: past the regular seeds (``eval.seed + k``, ``k < eval_episodes``) and past every
    earlier confirmation's, so each is fresh, and a pure function of the config and of the count of
    confirmations so far (which a checkpoint holds: a run resumed inside a confirmation replays it
    on the same seeds).

    Attributes:
        episodes: ``budget.confirm_episodes``.
        eval_episodes: ``eval.episodes`` (the regular seeds to skip).
    """

    episodes: int = MIN_CONFIRM_EPISODES
    eval_episodes: int = 0

    def first(self, c: int) -> int:
        """The offset from ``eval.seed`` of confirmation ``c``'s first seed."""
        return int(self.eval_episodes) + int(c) * int(self.episodes)

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Confirmation:
        """``budget.confirm_episodes`` and ``eval.episodes`` of a run config."""
        episodes = OmegaConf.select(cfg, "budget.confirm_episodes", default=None)
        episodes = MIN_CONFIRM_EPISODES if episodes is None else int(episodes)
        return cls(episodes, int(cfg.eval.episodes))


@register_check
def check_confirm_episodes(cfg: DictConfig) -> None:
    """A confirmation of fewer than :data:`MIN_CONFIRM_EPISODES` episodes is refused before any
    work: a stop confirmed by a few episodes is as optimistic as one not confirmed at all."""
    value = OmegaConf.select(cfg, "budget.confirm_episodes", default=None)
    if value is not None and int(value) < MIN_CONFIRM_EPISODES:
        raise ConfigError(
            f"budget.confirm_episodes={value}: a stop at a target is confirmed on at least "
            f"{MIN_CONFIRM_EPISODES} fresh evaluation episodes; allowed: an integer >= {MIN_CONFIRM_EPISODES}"
        )


def confirm_columns(confirm: StageEval, target: float | None) -> dict[str, float]:
    """The metrics columns of a confirmation, on the row evaluating the stage trained:
    ``confirm_return_mean``/``_std`` and ``confirmed`` (1.0 when it reached the target, the run
    stopping there; 0.0 when it did not, training going on)."""
    return {
        "confirm_return_mean": confirm.mean,
        "confirm_return_std": confirm.std,
        "confirmed": 1.0 if target_reached(target, confirm.mean) else 0.0,
    }


# --- rows -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counters:
    """What every row of a step carries: cumulative counters and where the run executes."""

    generation: int  # ES: generations completed; RL: index of the logging step
    timesteps: int
    frames: int
    episodes: int
    wall_clock_s: float
    cpu_s: float
    eval_timesteps: int
    workers: int

    def columns(self) -> dict[str, Any]:
        """The schema columns these fill (``steps_per_s`` derived)."""
        return {
            "generation": self.generation,
            "timesteps": self.timesteps,
            "frames": self.frames,
            "episodes": self.episodes,
            "wall_clock_s": self.wall_clock_s,
            "cpu_s": self.cpu_s,
            "eval_timesteps": self.eval_timesteps,
            "steps_per_s": self.timesteps / max(self.wall_clock_s, 1e-9) if self.timesteps else 0.0,
            "workers": self.workers,
        }


@dataclass(frozen=True)
class StageEval:
    """One stage's evaluation at a point: mean and std of the returns on the fixed seeds, the
    environment steps it took."""

    stage: str
    mean: float
    std: float
    steps: int = 0


def step_row(counters: Counters, train_stage: str, train: dict[str, Any]) -> dict[str, Any]:
    """The row of a training step without an evaluation (ES generations between points)."""
    return {
        **counters.columns(),
        **train,
        "train_task": train_stage,
        "eval_task": train_stage,
        "eval_return_mean": math.nan,
        "eval_return_std": math.nan,
    }


def point_rows(
    counters: Counters,
    train_stage: str,
    evals: Sequence[StageEval],
    train: dict[str, Any],
    shared: Mapping[str, Any] | None = None,
    per_stage: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of an evaluation point: one per evaluated stage, in stage order.

    Args:
        counters: Cumulative counters after the point (its evaluation steps included).
        train_stage: The name of the stage being trained (stage 0 at timestep 0).
        evals: Every stage of the plan, evaluated at this point.
        train: The step's training statistics and extras (``train_return_mean``, ``grad_norm``,
            ``param_norm``, ``es/...``, wire counts, ...): on the row evaluating ``train_stage``
            only, so a training curve has one value per step.
        shared: Columns of the parameters evaluated, on every row (the drift of
            :func:`drift_at_point`).
        per_stage: Columns of one evaluated stage, on its row (``policy_kl``).

    Returns:
        ``len(evals)`` rows.
    """
    rows = []
    for ev in evals:
        row: dict[str, Any] = {**counters.columns(), "train_task": train_stage, "eval_task": ev.stage}
        if ev.stage == train_stage:
            row.update(train)
        elif "param_norm" in train:
            row["param_norm"] = train["param_norm"]  # the same parameters are evaluated on every row
        row.update(shared or {})
        row.update((per_stage or {}).get(ev.stage, {}))
        row["eval_return_mean"] = ev.mean
        row["eval_return_std"] = ev.std
        rows.append(row)
    return rows


def drift_at_point(
    params: np.ndarray,
    snapshot: np.ndarray,
    records: Sequence[StageStates],
    distribution: DistributionFn,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The drift columns of an evaluation point (:mod:`esbench.training.drift`), as
    :func:`point_rows` takes them.

    Args:
        params: The parameters evaluated, shape (n_params,).
        snapshot: The last stage-boundary snapshot (the start of the stage trained).
        records: The states of every ended stage that has a later one (:class:`StageStates`).
        distribution: The current policy's action distributions on raw observations (the family's
            own code, with its current observation normalization).

    Returns:
        (``shared``: :data:`~esbench.tracking.schema.DRIFT_COLUMNS`, ``per_stage``: ``policy_kl`` of
        every recorded stage).
    """
    return drift_columns(params, snapshot), kl_columns(records, distribution)


def stage_end_states(
    plan: StagePlan,
    stage: int,
    record: Callable[[], StageStates],
    records: Sequence[StageStates],
) -> list[StageStates]:
    """``records`` with stage ``stage``'s states added when it ends with a later stage to come
    (``record`` plays them: :func:`esbench.training.drift.record_stage_states`); unchanged
    otherwise (the last stage: no later point would use them)."""
    if stage + 1 >= len(plan.stages) or any(r.stage == plan.stages[stage].name for r in records):
        return list(records)
    return [*records, record()]


# --- snapshots and summary --------------------------------------------------------------------


def write_snapshots(
    path: Path,
    params: Sequence[np.ndarray],
    stages: Sequence[str],
    boundaries: Sequence[int],
    layout: ParamLayout | None = None,
    names: Sequence[str] = (),
) -> None:
    """Write the stage-boundary parameter snapshots atomically (``snapshots.npz``), and the drift
    between every pair of their rows beside them (``snapshot_drift.csv``,
    :func:`esbench.tracking.snapshot_drift.pairwise_drift`: the few kilobytes a report ships when the
    snapshots are too large to).

    Arrays: ``params`` (k, n_params) float32, row i the parameters at the start of stage i and,
    once the run is complete, row K the final ones (K + 1 rows); ``boundaries`` (the ``T_i`` of the
    stages ended so far, int64); ``stages`` (names, unicode); ``layout_starts`` / ``layout_shapes``
    (the :data:`~esbench.utils.layout.ParamLayout`: block starts, and the shapes as JSON);
    ``layout_names`` (each block's name, e.g. a language model's parameter names) when given. Read
    with ``np.load(path, allow_pickle=False)`` or
    :func:`esbench.analysis.retention.load_snapshots`.
    """
    import io

    arrays: dict[str, np.ndarray] = {
        "params": np.stack([np.asarray(p, dtype=np.float32) for p in params]),
        "boundaries": np.asarray(list(boundaries), dtype=np.int64),
        "stages": np.asarray(list(stages), dtype=str),
    }
    if layout is not None:
        arrays["layout_starts"] = np.asarray([b.start for b in layout], dtype=np.int64)
        arrays["layout_shapes"] = np.asarray(json.dumps([list(b.shape) for b in layout]))
        if names:
            if len(names) != len(layout):
                raise ValueError(f"{len(names)} block names for {len(layout)} layout blocks")
            arrays["layout_names"] = np.asarray(list(names), dtype=str)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())
    drift = SnapshotDrift.of(arrays["params"], layout, names if layout is not None else ())
    write_snapshot_drift(Path(path).with_name(SNAPSHOT_DRIFT_FILE), drift)


def summary(
    *,
    plan: StagePlan,
    final_eval: float,
    best_eval: float,
    counters: Counters,
    params: np.ndarray,
    target: float | None,
    stopped_at_return: bool,
    resumed_from: list[int],
    boundaries: Sequence[int],
    stage_wall_clock_s: Sequence[float],
    final_eval_by_stage: dict[str, float],
) -> dict[str, Any]:
    """The trainer's part of ``summary.json`` (:data:`esbench.tracking.schema.SUMMARY_KEYS`; the
    runner adds the run's names), the same keys for both families.

    ``final_eval_return`` is the last evaluation of the stage trained last; a sequence adds
    ``sequence``, ``stages`` (names), ``stage_timesteps`` (budgets), ``stage_boundaries`` (``T_k``,
    where each stage ended), ``stage_wall_clock_s`` (where each ended, in seconds) and
    ``final_eval_return_by_stage``.
    """
    out: dict[str, Any] = {
        "final_eval_return": final_eval,
        "best_eval_return": best_eval if math.isfinite(best_eval) else math.nan,
        "total_timesteps": counters.timesteps,
        "total_frames": counters.frames,
        "total_episodes": counters.episodes,
        "wall_clock_s": counters.wall_clock_s,
        "cpu_s": counters.cpu_s,
        "steps_per_s": counters.timesteps / max(counters.wall_clock_s, 1e-9),
        "workers": counters.workers,
        "params_sha256": sha256_array(params),
        "stop_at_return": target,
        "stopped_at_return": bool(stopped_at_return),
        "resumed_from": list(resumed_from),
        "sequence": plan.sequence,
        "stages": plan.names,
        "stage_timesteps": [s.timesteps for s in plan.stages],
        "stage_boundaries": [int(b) for b in boundaries],
        "stage_wall_clock_s": [float(w) for w in stage_wall_clock_s],
        "final_eval_return_by_stage": dict(final_eval_by_stage),
    }
    if plan.only_stage is not None:
        out["only_stage"] = plan.only_stage
    return out


__all__ = [
    "MIN_CONFIRM_EPISODES",
    "Confirmation",
    "Counters",
    "Stage",
    "StageEval",
    "StagePlan",
    "check_confirm_episodes",
    "check_stop_at_return_with_sequence",
    "confirm_columns",
    "drift_at_point",
    "eval_due",
    "next_eval_at",
    "point_rows",
    "stage_end_states",
    "stage_plan",
    "step_row",
    "summary",
    "target_reached",
    "write_snapshots",
]
