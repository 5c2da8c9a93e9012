"""Structured configs: the schema every composed run config is checked against.

Each dataclass is registered in Hydra's ConfigStore, so a misspelled key or a value of the wrong
type fails at composition, before any work starts. Range and choice constraints that types cannot
express live in field metadata (``gt``, ``ge``, ``le``, ``choices``) and are checked by
:func:`esbench.config.validate.validate`. Config group files under ``conf/`` fill these schemas.

Structural choices (population size, antithetic sampling, optimizer) are kept apart from the numbers
one sweeps, as evosax does; defaults are the paper's (``../shared/reference/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


def _c(default: Any, **constraints: Any) -> Any:
    """A dataclass field with a default and validation constraints in its metadata."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=constraints)
    return field(default=default, metadata=constraints)


@dataclass
class OpenAIESConfig:
    """OpenAI-ES (Salimans et al. 2017, Algorithm 2 with the tricks of Sec. 2.2 and the supplement)."""

    name: str = "openai_es"
    population_size: int = _c(40, ge=2)  # perturbations per generation (antithetic: 2 per pair)
    antithetic: bool = True  # mirrored pairs +eps/-eps (the paper's choice)
    sigma: float = _c(0.02, gt=0.0)  # noise std (paper: 0.02 on MuJoCo)
    learning_rate: float = _c(0.01, gt=0.0)  # Adam step size (paper: 0.01)
    optimizer: str = _c("adam", choices=("adam", "sgd"))
    beta1: float = _c(0.9, ge=0.0, lt=1.0)
    beta2: float = _c(0.999, ge=0.0, lt=1.0)
    momentum: float = _c(0.9, ge=0.0, lt=1.0)  # SGD only
    l2_coeff: float = _c(0.005, ge=0.0)  # weight decay (paper: 0.005)
    fitness_shaping: str = _c("centered_rank", choices=("centered_rank", "z_score", "raw"))
    noise_table_size: int = _c(25_000_000, ge=1000)  # float32 entries (paper: 250M, ~1 GB)
    noise_seed: int = _c(123, ge=0)  # the paper's table seed
    action_noise_std: float = _c(0.01, ge=0.0)  # training only, never at evaluation (paper: 0.01)
    obs_norm_fraction: float = _c(0.01, ge=0.0, le=1.0)  # share of rollouts feeding obs statistics
    # Execution knobs (the numbers do not depend on them). A generation is split into about
    # workers*tasks_per_worker Dask tasks; an MLP task steps up to rollout_batch episodes in
    # lockstep, in rounds as full as possible. One large task per worker amortizes the batched
    # forward pass best (`esbench bench`, README); Atari's variable-length episodes use 2.
    tasks_per_worker: int = _c(1, ge=1)
    rollout_batch: int = _c(32, ge=1)


@dataclass
class EnvConfig:
    """An environment: any Gymnasium MuJoCo id, a classic-control id, or an ALE game."""

    name: str = "halfcheetah"  # short name used in run ids and reports
    id: str = "HalfCheetah-v5"  # the Gymnasium id (checked against the registry)
    kind: str = _c("mujoco", choices=("mujoco", "classic", "atari", "debug"))
    max_episode_steps: int | None = _c(None, ge=1)  # None: the environment's own limit
    kwargs: dict[str, Any] = field(default_factory=dict)  # extra gymnasium.make kwargs
    # Atari only (Mnih et al. 2016 preprocessing).
    game: str | None = None  # e.g. "Pong"; sets id to ALE/<game>-v5
    frame_skip: int = _c(4, ge=1)
    noop_max: int = _c(30, ge=0)
    screen_size: int = _c(84, ge=8)
    frame_stack: int = _c(4, ge=1)
    sticky_action_prob: float = _c(0.0, ge=0.0, le=1.0)  # the paper predates sticky actions
    full_action_space: bool = False
    clip_rewards: bool = True  # RL training only; reported scores are never clipped
    terminal_on_life_loss: bool = False


@dataclass
class PolicyConfig:
    """The network shared by ES and the RL baselines (same sizes on both sides of a comparison)."""

    kind: str = _c("mlp", choices=("mlp", "cnn"))
    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])  # paper: 64x64 on MuJoCo
    activation: str = _c("tanh", choices=("tanh", "relu"))
    action_bins: int = _c(0, ge=0)  # 0: continuous; k: discretize each dim into k bins (paper: 10)
    obs_norm: bool = True  # running mean/std normalization (MuJoCo)
    obs_clip: float = _c(5.0, gt=0.0)
    vbn_reference_size: int = _c(128, ge=1)  # Atari CNN: reference batch for virtual batch norm


@dataclass
class BudgetConfig:
    """How much work a run may do. ``scale`` names the budget (smoke / mini / paper)."""

    scale: str = _c("mini", choices=("smoke", "mini", "paper", "custom"))
    timesteps: int = _c(1_000_000, ge=1)  # training environment steps (agent steps)
    generations: int | None = _c(None, ge=1)  # ES only: stop after this many generations too


@dataclass
class EvalConfig:
    """Evaluation of the deterministic policy on fixed seeds, at regular timestep intervals."""

    interval_timesteps: int = _c(50_000, ge=1)
    episodes: int = _c(5, ge=1)
    seed: int = _c(1_000_000, ge=0)  # episode k is reset with seed + k, every time, for every algo


@dataclass
class ClusterConfig:
    """Where rollouts (ES) or whole runs (RL, sweeps) execute."""

    kind: str = _c("local", choices=("local", "address", "slurm"))
    n_workers: int | None = _c(None, ge=1)  # local: default one per core
    threads_per_worker: int = _c(1, ge=1)
    address: str | None = None  # kind=address: tcp://HOST:PORT of a running `dask scheduler`
    connect_timeout_s: float = _c(10.0, gt=0.0)
    dashboard: bool = True  # serve the Dask dashboard when bokeh is installed
    memory_limit: str = "auto"
    worker_profile: bool = False  # Dask's per-worker stack sampler (costs rollouts 5-10%); local/slurm
    # local: how often Dask's servers poll memory, system load and event-loop health (Dask's own
    # 0.1 s / 0.5 s / 20 ms took the driver ~4% of a core, time a rollout on that core lost)
    monitor_interval_s: float = _c(1.0, gt=0.0)
    # kind=slurm (dask-jobqueue SLURMCluster)
    queue: str | None = None
    account: str | None = None
    cores: int = _c(1, ge=1)
    memory: str = "4GB"
    walltime: str = "01:00:00"
    jobs: int = _c(1, ge=1)


@dataclass
class TrackerConfig:
    """Run tracking: the local results store always; W&B and console when enabled."""

    wandb: bool = True
    mode: str = _c("offline", choices=("offline", "online", "disabled"))
    project: str = "esbench"
    entity: str | None = None
    tags: list[str] = field(default_factory=list)
    console: bool = True  # progress line with timesteps, best return, steps/s


@dataclass
class RunConfig:
    """A whole run. It is a pure function of this config: same config, same numbers."""

    algo: Any = MISSING
    env: EnvConfig = field(default_factory=EnvConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    seed: int = _c(0, ge=0)
    experiment: str = "default"  # results/runs/<experiment>/<run_id>/
    results_dir: str = "results/runs"
    run_id: str | None = None  # default: derived from algo, env, seed and a hash of the config
    checkpoint_every: int = _c(10, ge=1)  # ES: generations between checkpoints
    resume: bool = True  # resume from a checkpoint / skip a complete run with the same run_id
    torch_threads: int = _c(1, ge=1)


ALGO_SCHEMAS: dict[str, type] = {"openai_es": OpenAIESConfig}
"""Registry key -> algo schema. Baselines add theirs with :func:`register_algo_schema`."""


def register_algo_schema(name: str, schema: type) -> None:
    """Register an algorithm's config schema as ``algo/<name>_schema`` in Hydra's ConfigStore."""
    ALGO_SCHEMAS[name] = schema
    ConfigStore.instance().store(group="algo", name=f"{name}_schema", node=schema)


def register_configs() -> None:
    """Store every schema in Hydra's ConfigStore (idempotent)."""
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    for name, schema in ALGO_SCHEMAS.items():
        cs.store(group="algo", name=f"{name}_schema", node=schema)
