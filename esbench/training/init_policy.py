"""A run that starts from a given policy: another run's parameters at a stage boundary, or a file.

``init.from_run=<run dir>[:<stage>]`` starts a run's first trained stage from the parameters a
finished stage of another run (the *base*) ended with; ``init.params=<file.npz>`` from a parameter
file. This module owns what every learner shares about that: reading the base (:func:`load_base`),
checking it against the run before any work (:func:`check_init`, one line naming what differs),
where the run starts in its stage plan (:func:`start_stage`), what the run records of its base
(:meth:`BasePolicy.record`), and the observation normalization a run writes at each of its own
boundaries so that it can be a base in turn (:class:`ObsNorm`, ``obs_norm.npz``).

The network is the ruler's MLP (``policy.hidden_sizes``, ``policy.activation``): the ES policy
is that MLP; an SB3 actor-critic's actor mean is the same MLP (``mlp_extractor.policy_net`` then
``action_net``), so one flat vector, in the ES layout (per layer the weight ``(out, in)``, then the
bias), carries the policy from either family to either (:meth:`BasePolicy.actor_blocks`). What an
SB3 run adds (the log std, the value network) is the SB3 learner's own
(:mod:`esbench.training.sb3_init`).

Observation normalization travels with the parameters. Both families divide ``obs - mean`` by a
std and clip: ES by ``sqrt(max(var, 1e-2))`` at ``policy.obs_clip``, SB3's VecNormalize by
``sqrt(var + 1e-8)`` at 10. :class:`ObsNorm` holds both as ``sqrt(max(var + eps, floor))`` with
its clip, so the run normalizes exactly as its base did at its first evaluation point.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.registry import get_algorithm
from esbench.config.validate import register_check
from esbench.tracking.schema import (
    CONFIG_FILE,
    OBS_NORM_FILE,
    PROBE_STATES_FILE,
    SNAPSHOTS_FILE,
    STAGE_STATES_FILE,
    SUMMARY_FILE,
)
from esbench.tracking.stage_states import load_stage_states
from esbench.training.ruler import StagePlan, stage_plan
from esbench.training.sequence_loop import SequenceProgress
from esbench.utils.io import atomic_write_bytes
from esbench.utils.seeding import sha256_array

__all__ = [
    "BasePolicy",
    "ObsNorm",
    "check_init",
    "enter_at_base",
    "load_base",
    "record_obs_norm",
    "start_stage",
    "write_obs_norms",
]

#: SB3 algorithms whose actor is the ruler's MLP (an actor-critic with a mean network).
SB3_ACTORS = ("ppo", "trpo", "a2c")


@dataclass(frozen=True)
class ObsNorm:
    """Observation normalization: ``clip((obs - mean) / sqrt(max(var + eps, floor)), -clip, clip)``.

    Attributes:
        mean, var: Shape (obs_dim,), float64.
        count: The observations the statistics were computed from (how fast they move on).
        clip: The clip of the normalized observation.
        floor: The variance floor (ES: 1e-2; SB3: 0).
        eps: Added to the variance (ES: 0; SB3's VecNormalize: 1e-8).
    """

    mean: np.ndarray
    var: np.ndarray
    count: float
    clip: float
    floor: float = 0.0
    eps: float = 0.0

    @property
    def std(self) -> np.ndarray:
        """What ``obs - mean`` is divided by, shape (obs_dim,)."""
        return np.sqrt(np.maximum(self.var + self.eps, self.floor))

    def as_data(self) -> dict[str, Any]:
        """As plain data (a checkpoint's progress holds it so)."""
        return {
            "mean": np.asarray(self.mean, np.float64),
            "var": np.asarray(self.var, np.float64),
            "count": float(self.count),
            "clip": float(self.clip),
            "floor": float(self.floor),
            "eps": float(self.eps),
        }

    @classmethod
    def of_data(cls, d: dict[str, Any]) -> ObsNorm:
        """From :meth:`as_data`."""
        return cls(
            np.asarray(d["mean"], np.float64),
            np.asarray(d["var"], np.float64),
            float(d["count"]),
            float(d["clip"]),
            float(d["floor"]),
            float(d["eps"]),
        )


def record_obs_norm(progress: SequenceProgress, names: list[str], norm: ObsNorm | None) -> None:
    """Keep ``norm``, the normalization the stage that just ended acted with, in ``progress`` (once
    per stage; at a boundary, before the next stage begins: ``on_boundary``)."""
    if not progress.boundaries or norm is None:
        return
    ended = names[len(progress.boundaries) - 1]
    if ended not in progress.obs_norms:
        progress.obs_norms = {**progress.obs_norms, ended: norm.as_data()}


def write_obs_norms(path: Path, norms: dict[str, dict[str, Any]]) -> None:
    """Write ``obs_norm.npz`` atomically: per stage ended (``stages``, names), the normalization
    its final policy acted with (``mean``/``var`` (n, obs_dim), ``count``, ``clip``, ``floor``,
    ``eps`` (n,)). Nothing for a run that does not normalize observations."""
    if not norms:
        return
    rows = [ObsNorm.of_data(d) for d in norms.values()]
    arrays = {
        "stages": np.asarray(list(norms), dtype=str),
        "mean": np.stack([r.mean for r in rows]),
        "var": np.stack([r.var for r in rows]),
        **{
            k: np.asarray([getattr(r, k) for r in rows], np.float64)
            for k in ("count", "clip", "floor", "eps")
        },
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())


def _read_obs_norm(path: Path, stage: str) -> ObsNorm | None:
    """The normalization stage ``stage`` ended with in ``obs_norm.npz`` (None: not recorded)."""
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as a:
        names = [str(s) for s in a["stages"]]
        if stage not in names:
            return None
        i = names.index(stage)
        return ObsNorm(
            a["mean"][i], a["var"][i], *(float(a[k][i]) for k in ("count", "clip", "floor", "eps"))
        )


@dataclass(frozen=True)
class Network:
    """The ruler's MLP as a base and a run describe it (what must match)."""

    hidden_sizes: tuple[int, ...]
    activation: str
    bias: bool
    action_bins: int

    @classmethod
    def of(cls, cfg: Any) -> Network:
        p = cfg.policy
        return cls(tuple(int(h) for h in p.hidden_sizes), str(p.activation), bool(p.bias), int(p.action_bins))


@dataclass(frozen=True)
class BasePolicy:
    """A starting policy: the ruler's MLP as a flat ES-layout vector, and its normalization.

    Attributes:
        source: ``init.from_run`` or ``init.params`` as given.
        run_id: The base run's id (None for a parameter file).
        algo: The base run's algorithm (None for a file).
        sequence: The base run's ``sequence.name`` (``none`` without one, or a file).
        stage: The name of the stage whose end the parameters are (None for a file).
        stage_index: That stage's index in the base's sequence (None for a file).
        params: The parameter vector as the base recorded it (``snapshots.npz``'s row).
        actor: The MLP's parameters, flat, ES layout.
        network: The MLP's structure (None for a file: the run's own is assumed).
        obs: Its observation normalization (None: it acts on raw observations).
        run_dir: The base run's directory (None for a file).
    """

    source: str
    run_id: str | None
    algo: str | None
    sequence: str
    stage: str | None
    stage_index: int | None
    params: np.ndarray
    actor: np.ndarray
    network: Network | None
    obs: ObsNorm | None
    run_dir: Path | None = None

    def record(self) -> dict[str, Any]:
        """What a run records of its base (its summary's ``init``)."""
        return {
            "source": self.source,
            "run_id": self.run_id,
            "algo": self.algo,
            "sequence": self.sequence,
            "stage": self.stage,
            "stage_index": self.stage_index,
            "params_sha256": sha256_array(self.params),
            "actor_sha256": sha256_array(self.actor),
        }

    def actor_blocks(self, shapes: list[tuple[int, int]]) -> list[np.ndarray]:
        """The actor as weight, bias arrays per layer, in order; ``shapes`` the (out, in) of each."""
        out, pos = [], 0
        for o, i in shapes:
            out.append(self.actor[pos : pos + o * i].reshape(o, i))
            pos += o * i
            out.append(self.actor[pos : pos + o])
            pos += o
        return out


def _fail(cfg: DictConfig, what: str, allowed: str) -> ConfigError:
    key = "init.from_run" if cfg.init.from_run is not None else "init.params"
    return ConfigError(f"{key}={cfg.init[key.split('.')[1]]}: {what}; {allowed}")


def _split_source(value: str) -> tuple[Path, str | None]:
    """``<run dir>[:<stage>]`` as (dir, stage or None)."""
    head, sep, tail = value.rpartition(":")
    if sep and tail and "/" not in tail and head:
        return Path(head), tail
    return Path(value), None


def _sb3_actor(params: np.ndarray, layout: list[tuple[int, ...]], n_hidden: int) -> np.ndarray:
    """The actor's mean network of an SB3 actor-critic's ``policy_vector``, ES layout.

    SB3's ``ActorCriticPolicy.state_dict()`` order is ``log_std`` (Box actions only), then
    ``mlp_extractor.policy_net`` (weight, bias per hidden layer), ``mlp_extractor.value_net``
    (likewise), ``action_net`` (weight, bias), ``value_net`` (weight, bias).
    """
    blocks, pos = [], 0
    for shape in layout:
        size = int(np.prod(shape))
        blocks.append(params[pos : pos + size])
        pos += size
    skip = 1 if len(layout) == 4 * n_hidden + 5 else 0  # log_std first
    pi = blocks[skip : skip + 2 * n_hidden]
    action = blocks[skip + 4 * n_hidden : skip + 4 * n_hidden + 2]
    return np.concatenate([*pi, *action]).astype(np.float32)


def load_base(cfg: DictConfig) -> BasePolicy | None:
    """The starting policy ``cfg.init`` names (None when unset).

    Raises:
        ConfigError: both keys set, an unknown run dir or file, a stage the base does not have or
            has not ended, a base without the ruler's MLP (one line naming what is wrong).
    """
    init = OmegaConf.select(cfg, "init", default=None)
    if init is None or (init.from_run is None and init.params is None):
        return None
    if init.from_run is not None and init.params is not None:
        raise ConfigError(
            f"init.from_run={init.from_run} and init.params={init.params}: a run starts from one "
            "policy; allowed: one of them"
        )
    if init.params is not None:
        return _load_file(cfg, Path(str(init.params)))
    run_dir, stage = _split_source(str(init.from_run))
    return _load_run(cfg, run_dir, stage)


def _load_file(cfg: DictConfig, path: Path) -> BasePolicy:
    if not path.is_file():
        raise _fail(cfg, "no such file", "allowed: an .npz with a 'params' array")
    try:
        with np.load(path, allow_pickle=False) as a:
            arrays = {k: a[k] for k in a.files}
    except (OSError, ValueError) as e:
        raise _fail(cfg, f"not a readable .npz ({e})", "allowed: an .npz with a 'params' array") from None
    if "params" not in arrays:
        raise _fail(cfg, "no 'params' array", "allowed: an .npz with a 'params' array")
    actor = np.asarray(arrays["params"], np.float32).reshape(-1)
    obs = None
    if "obs_mean" in arrays:
        obs = ObsNorm(
            np.asarray(arrays["obs_mean"], np.float64),
            np.asarray(arrays["obs_var"], np.float64),
            float(arrays.get("obs_count", 1.0)),
            float(arrays.get("obs_clip", cfg.policy.obs_clip)),
            float(arrays.get("obs_floor", 0.0)),
            float(arrays.get("obs_eps", 0.0)),
        )
    return BasePolicy(str(path), None, None, "none", None, None, actor, actor, None, obs)


def _load_run(cfg: DictConfig, run_dir: Path, stage: str | None) -> BasePolicy:
    if not (run_dir / CONFIG_FILE).is_file() or not (run_dir / SNAPSHOTS_FILE).is_file():
        raise _fail(
            cfg,
            f"not a run directory ({run_dir / CONFIG_FILE} or {SNAPSHOTS_FILE} missing)",
            "allowed: the directory of a run that ended a stage (results/runs/<experiment>/<run id>)",
        )
    base_cfg = OmegaConf.load(run_dir / CONFIG_FILE)
    assert isinstance(base_cfg, DictConfig)
    with np.load(run_dir / SNAPSHOTS_FILE, allow_pickle=False) as a:
        rows, names = a["params"], [str(s) for s in a["stages"]]
        ended = len(a["boundaries"])
        shapes = [tuple(s) for s in json.loads(str(a["layout_shapes"]))] if "layout_shapes" in a else []
    sequence = str(OmegaConf.select(base_cfg, "sequence.name", default="none"))
    only = OmegaConf.select(base_cfg, "sequence.only_stage", default=None)
    offset = int(only) if only is not None else 0  # the sequence index of the plan's first stage
    seq_stages = [str(s.name) for s in (OmegaConf.select(base_cfg, "sequence.stages", default=None) or [])]
    allowed_names = seq_stages or names
    if stage is None:
        position = ended - 1
        if position < 0:
            raise _fail(cfg, "the base has not ended a stage yet", "allowed: a run that ended one")
    else:
        index = int(stage) if stage.lstrip("-").isdigit() else None
        if index is None and stage not in allowed_names:
            raise _fail(cfg, f"the base has no stage {stage!r}", f"allowed: {', '.join(allowed_names)}")
        if index is not None and not 0 <= index < len(allowed_names):
            raise _fail(
                cfg,
                f"stage {index} is out of range",
                f"allowed: 0..{len(allowed_names) - 1} ({', '.join(allowed_names)})",
            )
        name = allowed_names[index] if index is not None else stage
        if name not in names[:ended]:
            done = ", ".join(names[:ended]) or "none"
            raise _fail(cfg, f"the base did not end stage {name!r}", f"allowed: a stage it ended ({done})")
        position = names.index(name)
    summary_path = run_dir / SUMMARY_FILE
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    algo = str(base_cfg.algo.name)
    spec = get_algorithm(algo)
    network = Network.of(base_cfg)
    params = np.asarray(rows[position + 1], np.float32)
    if spec.family == "es":
        actor = params
    elif algo in SB3_ACTORS:
        actor = _sb3_actor(params, shapes, len(network.hidden_sizes))
    else:
        raise _fail(
            cfg,
            f"the base ({algo}) has no actor MLP to start from",
            f"allowed: ES or {', '.join(SB3_ACTORS)}",
        )
    stage_name = names[position]
    obs = _read_obs_norm(run_dir / OBS_NORM_FILE, stage_name)
    run_id = str(summary.get("run_id") or run_dir.name)
    return BasePolicy(
        str(cfg.init.from_run),
        run_id,
        algo,
        sequence,
        stage_name,
        position + offset,
        params,
        actor,
        network,
        obs,
        run_dir,
    )


def base_normalizes(cfg: DictConfig) -> bool:
    """Whether a run config normalizes observations (ES: ``policy.obs_norm``; SB3: ``normalize``)."""
    if get_algorithm(str(cfg.algo.name)).family == "es":
        return bool(cfg.policy.obs_norm)
    from esbench.baselines.configs import resolve_hparams

    return bool(resolve_hparams(cfg)["normalize"]) and str(cfg.env.kind) != "atari"


def start_stage(cfg: DictConfig, base: BasePolicy, plan: StagePlan | None = None) -> int:
    """The plan position of the stage a run from ``base`` trains first: the stage after the base's
    when the run trains the same sequence, else its first stage."""
    plan = plan or stage_plan(cfg)
    seq = str(OmegaConf.select(cfg, "sequence.name", default="none"))
    if seq == "none" or base.stage_index is None or base.sequence != seq:
        return 0
    for position, stage in enumerate(plan.stages):
        if stage.index == base.stage_index + 1:
            return position
    last = plan.stages[-1].index
    raise _fail(
        cfg,
        f"the base ended stage {base.stage_index} ({base.stage}) of {seq}: no later stage to train",
        f"allowed: a stage before the last ({last})",
    )


def enter_at_base(progress: SequenceProgress, base: BasePolicy, start: int, names: list[str]) -> None:
    """A fresh run's counters at its first trained stage ``start``: the stages before it ended at
    timestep 0 (the base's), with the states and probe sets the base recorded on them (its
    ``stage_states.npz``, ``probe_states.npz``: the policy KL and the behavioural probes of those
    stages are then measured on the base's states, for every run from the same base)."""
    progress.stage = start
    progress.boundaries = [0] * start
    progress.boundary_wall_clock_s = [0.0] * start
    progress.base = {**base.record(), **progress.base}  # what the learner recorded (SB3's warm-up)
    earlier = set(names[:start])
    if base.run_dir is not None and (base.run_dir / STAGE_STATES_FILE).is_file():
        states = load_stage_states(base.run_dir / STAGE_STATES_FILE)
        progress.stage_states = [r for r in states if r.stage in earlier]
    if base.run_dir is not None and (base.run_dir / PROBE_STATES_FILE).is_file():
        probes = [r for r in load_stage_states(base.run_dir / PROBE_STATES_FILE) if r.stage in earlier]
        progress.probes = probes if len(probes) == start else []


def _check_network(cfg: DictConfig, base: BasePolicy, plan: StagePlan, start: int) -> None:
    """One line naming the first difference between the base's network and the run's."""
    from esbench.envs import make_env

    algo = str(cfg.algo.name)
    spec = get_algorithm(algo)
    if spec.family != "es" and algo not in SB3_ACTORS:
        raise _fail(
            cfg, f"algo={algo} has no actor MLP to load", f"allowed: ES algorithms or {', '.join(SB3_ACTORS)}"
        )
    if str(cfg.policy.kind) != "mlp":
        raise _fail(cfg, f"policy.kind={cfg.policy.kind}", "allowed: policy.kind=mlp (the ruler's MLP)")
    mine = Network.of(cfg)
    if spec.family != "es" and (mine.action_bins or not mine.bias):
        raise _fail(
            cfg, f"algo={algo} cannot act with policy.action_bins/bias of an ES policy", "allowed: an ES run"
        )
    theirs = base.network or mine
    for key in ("hidden_sizes", "activation", "bias", "action_bins"):
        a, b = getattr(theirs, key), getattr(mine, key)
        if a != b:
            show = (lambda v: list(v)) if key == "hidden_sizes" else (lambda v: v)
            raise _fail(
                cfg,
                f"policy.{key} differs: the base's {show(a)}, the run's {show(b)}",
                "allowed: the same network",
            )
    env = make_env(plan.stages[start].env_cfg(), training=False)
    try:
        obs_dim = int(np.prod(env.observation_space.shape or ()))
        space = env.action_space
        n_actions = getattr(space, "n", None)
        per_dim = max(mine.action_bins, 1)
        out = int(n_actions) if n_actions is not None else int(np.prod(space.shape or ())) * per_dim
    finally:
        env.close()
    sizes = [obs_dim, *mine.hidden_sizes, out]
    expected = sum(sizes[i + 1] * sizes[i] + sizes[i + 1] for i in range(len(sizes) - 1))
    if base.actor.size != expected:
        raise _fail(
            cfg,
            f"the base's MLP has {base.actor.size} parameters, this run's (obs {obs_dim}, actions {out}, "
            f"hidden {list(mine.hidden_sizes)}) {expected}: its observation or action shape differs",
            "allowed: a base on the same observation and action spaces",
        )


def _check_obs_norm(cfg: DictConfig, base: BasePolicy) -> None:
    """The run normalizes observations exactly when its base does, with the base's clip (ES)."""
    mine = base_normalizes(cfg)
    key = "policy.obs_norm" if get_algorithm(str(cfg.algo.name)).family == "es" else "algo.normalize"
    if base.obs is None and mine:
        raise _fail(
            cfg, "the base acts on raw observations, the run normalizes them", f"allowed: {key}=false"
        )
    if base.obs is not None and not mine:
        raise _fail(cfg, "the base normalizes observations, the run does not", f"allowed: {key}=true")
    if base.obs is not None and key == "policy.obs_norm" and float(cfg.policy.obs_clip) != base.obs.clip:
        raise _fail(
            cfg,
            f"the base clips normalized observations at {base.obs.clip:g}, the run at {cfg.policy.obs_clip}",
            f"allowed: policy.obs_clip={base.obs.clip:g}",
        )


@register_check
def check_init(cfg: DictConfig) -> None:
    """A given starting policy that cannot start this run is refused before any work: both keys
    set, an unknown run dir or file, a stage out of range or not ended, a network, observation or
    action shape, or normalization that differs from the run's (one line naming it)."""
    if OmegaConf.select(cfg, "init", default=None) is None or "algo" not in cfg or "env" not in cfg:
        return
    base = load_base(cfg)
    if base is None:
        return
    if str(cfg.env.kind) in ("lm", "atari"):
        raise _fail(cfg, f"env.kind={cfg.env.kind}", "allowed: an MLP environment (MuJoCo, classic control)")
    plan = stage_plan(cfg)
    start = start_stage(cfg, base, plan)
    _check_network(cfg, base, plan, start)
    _check_obs_norm(cfg, base)
