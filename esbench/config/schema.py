"""Structured configs: the schema every composed run config is checked against.

Each dataclass is registered in Hydra's ConfigStore, so a misspelled key or a value of the wrong
type fails at composition, before any work starts. Range and choice constraints that types cannot
express live in field metadata (``gt``, ``ge``, ``le``, ``choices``) and are checked by
:func:`esbench.config.validate.validate`. Config group files under ``conf/`` fill these schemas.

Structural choices (population size, antithetic sampling, optimizer) are kept apart from the numbers
one sweeps, as evosax does; defaults are the paper's (``results/reference/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from esbench.config.lm import LMConfig


def _c(default: Any, **constraints: Any) -> Any:
    """A dataclass field with a default and validation constraints in its metadata."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=constraints)
    return field(default=default, metadata=constraints)


@dataclass
class ESConfig:
    """What every ES variant shares and the runtime reads: population, noise, rollouts, execution.

    Each strategy's schema (``esbench/strategies/<key>.py``) extends this with its own
    hyperparameters; the runtime (workers, lockstep rollouts, the ES loop) reads only these fields,
    so a new variant runs on the same Dask runtime with nothing else to change.
    """

    name: str = MISSING  # the registry key (= conf/algo/<name>.yaml)
    population_size: int = _c(40, ge=2)  # evaluations per generation (antithetic: 2 per member)
    antithetic: bool = True  # mirrored pairs +eps/-eps (Salimans et al. 2017, Sec. 2.2)
    sigma: float = _c(0.02, gt=0.0)  # perturbation std (initial std for adaptive variants)
    noise_table_size: int = _c(25_000_000, ge=1000)  # float32 entries (paper: 250M, ~1 GB)
    noise_seed: int = _c(123, ge=0)  # the paper's table seed
    action_noise_std: float = _c(0.01, ge=0.0)  # training only, never at evaluation (paper: 0.01)
    obs_norm_fraction: float = _c(0.01, ge=0.0, le=1.0)  # share of rollouts feeding obs statistics
    # Training fitness = return - reward_shift * episode length (ARS's survival-bonus removal,
    # Mania et al. 2018, Sec. 3; 0: the plain return). Reported returns are never shifted.
    reward_shift: float = 0.0
    # Execution knobs (the numbers do not depend on them). A generation is split into about
    # workers*tasks_per_worker Dask tasks; an MLP or CNN task steps up to rollout_batch episodes in
    # lockstep, in rounds as full as possible. One large task per worker amortizes the batched
    # forward pass best (`esbench bench`, docs/benchmarks.md); Atari's variable-length episodes use 2.
    tasks_per_worker: int = _c(1, ge=1)
    rollout_batch: int = _c(32, ge=1)
    # Generation records each task's sync message carries, so a worker up to this many generations
    # behind catches up by replay; one further behind is sent a snapshot (the numbers are the same).
    # 1 makes messages ~4x smaller at 10,000 episodes (`esbench bench projection`, docs/benchmarks.md).
    sync_history: int = _c(4, ge=1)


@dataclass
class GradientESConfig(ESConfig):
    """ES variants that step a first-order optimizer on an estimated gradient (OpenAI-ES, PGPE,
    ARS, the simple ES). The optimizer is chosen once, when the strategy is built
    (:func:`esbench.strategies.optimizers.make_optimizer`)."""

    optimizer: str = _c("adam", choices=("adam", "sgd", "clipup"))
    learning_rate: float = _c(0.01, gt=0.0)  # step size (ClipUp: the step length)
    beta1: float = _c(0.9, ge=0.0, lt=1.0)  # Adam
    beta2: float = _c(0.999, ge=0.0, lt=1.0)  # Adam
    momentum: float = _c(0.9, ge=0.0, lt=1.0)  # SGD and ClipUp
    max_speed: float | None = _c(None, gt=0.0)  # ClipUp's velocity cap (None: 2 * learning_rate)
    l2_coeff: float = _c(0.0, ge=0.0)  # weight decay added to the loss gradient
    # What weight decay pulls toward: zero (classic L2), or the parameters the current stage of a
    # task sequence started from (Anchored Weight Decay; the run's start outside a sequence).
    l2_anchor: str = _c("zero", choices=("zero", "stage_start"))
    fitness_shaping: str = _c("centered_rank", choices=("centered_rank", "z_score", "raw"))


@dataclass
class EnvConfig:
    """An environment: any Gymnasium MuJoCo id, a classic-control id, an ALE game, or any other
    registered id (``kind: custom``; ``id: my_pkg.envs:MyEnv-v0`` imports ``my_pkg.envs`` first)."""

    name: str = "halfcheetah"  # short name used in run ids and reports
    id: str = "HalfCheetah-v5"  # the Gymnasium id (checked against the registry)
    # custom: any other registered Gymnasium id; ``module:id`` imports the module that registers it
    # lm: the language-model environment (conf/env/lm.yaml; its settings are the run's ``lm`` block)
    kind: str = _c("mujoco", choices=("mujoco", "classic", "atari", "custom", "lm"))
    max_episode_steps: int | None = _c(None, ge=1)  # None: the environment's own limit
    kwargs: dict[str, Any] = field(default_factory=dict)  # extra gymnasium.make kwargs
    # Changes to the simulated world applied by make_env after construction, so ES workers and SB3
    # see the same env (esbench.envs.variants: e.g. body_mass_scale, geom_friction_scale, gravity_z on
    # MuJoCo; gravity, length, masspole on CartPole). Empty: the environment as registered.
    dynamics: dict[str, float] = field(default_factory=dict)
    # [k, K]: a one-hot id of stage k of K appended to the observation (set per stage by
    # sequence.stage_id_obs; esbench.envs.variants.append_stage_id). Empty: none.
    stage_id: list[int] = field(default_factory=list)
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
    # Evaluation episodes end at game over or after this many emulator frames (no-op starts
    # included), whatever the frame skip, instead of at max_episode_steps; at most ALE v5's own
    # 108,000 (the paper's cap). None: evaluation episodes are capped like training ones, and
    # the run id leaves it out.
    eval_max_episode_frames: int | None = _c(None, ge=1)


@dataclass
class PolicyConfig:
    """The network shared by ES and the RL baselines (same sizes on both sides of a comparison)."""

    kind: str = _c("mlp", choices=("mlp", "cnn"))
    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])  # paper: 64x64 on MuJoCo
    bias: bool = True  # MLP biases (false: weights only, ARS's linear policy)
    activation: str = _c("tanh", choices=("tanh", "relu"))
    action_bins: int = _c(0, ge=0)  # 0: continuous; k: discretize each dim into k bins (paper: 10)
    obs_norm: bool = True  # running mean/std normalization (MuJoCo)
    obs_clip: float = _c(5.0, gt=0.0)
    vbn_reference_size: int = _c(128, ge=1)  # Atari CNN: reference batch for virtual batch norm


@dataclass
class BudgetConfig:
    """How much work a run may do. ``scale`` names the budget preset (conf/budget/<scale>.yaml)."""

    scale: str = _c("mini", choices=("smoke", "mini", "decisive", "decisive_hard", "paper", "custom"))
    timesteps: int = _c(1_000_000, ge=1)  # training environment steps (agent steps)
    generations: int | None = _c(None, ge=1)  # ES only: stop after this many generations too
    # Timesteps of each stage of a task sequence (conf/sequence/*.yaml read it as their
    # sequence.stage_timesteps); None: the preset gives no stage budget and a sequence run refuses.
    stage_timesteps: int | None = _c(None, ge=1)
    # Stop at the first evaluation at or above this score (reports count the run as having reached
    # it, at that timestep, not as censored). stop_at_return_by_env gives one score per env id
    # (e.g. {Hopper-v5: 3403.46}, what a recipe fills from published targets); it wins when it
    # names this run's env.
    stop_at_return: float | None = None
    stop_at_return_by_env: dict[str, float] = field(default_factory=dict)
    # A point at or above the target is confirmed on this many fresh evaluation seeds before the
    # run stops there (esbench.training.ruler.Confirmation; at least 10). Without a target it
    # changes nothing, and the run id leaves it out.
    confirm_episodes: int = 10


@dataclass
class EvalConfig:
    """Evaluation on fixed seeds, at regular timestep intervals, the way each family's published
    numbers were obtained (``policy``; :mod:`esbench.config.eval_protocol` resolves ``auto``).

    ``auto``: ES and every run off Atari act deterministically (argmax / the mean action); on Atari,
    policy-gradient baselines (A2C, PPO, TRPO) sample their policy, as A3C's published scores were
    obtained (Mnih et al. 2016), and DQN acts epsilon-greedily with ``epsilon`` (0.05, Mnih et al.
    2015). Random actions come from streams derived from (run seed, timestep, episode), never from a
    global RNG, so evaluating changes nothing in training and stays a pure function of the config.
    """

    interval_timesteps: int = _c(50_000, ge=1)
    episodes: int = _c(5, ge=1)
    seed: int = _c(1_000_000, ge=0)  # episode k is reset with seed + k, every time, for every algo
    policy: str = _c("auto", choices=("auto", "deterministic", "sampled", "epsilon_greedy"))
    epsilon: float = _c(0.05, ge=0.0, le=1.0)  # epsilon_greedy: chance of a uniform random action
    # Also evaluate the stage trained acting stochastically, at every point, on the same seeds
    # (eval_stochastic_return_mean): RL samples its policy (SB3 deterministic=False, how the
    # paper's TRPO targets were measured); ES adds Gaussian action noise of algo.action_noise_std
    # (the paper's training noise, continuous actions only). eval.policy stays the main protocol
    # and must not already be stochastic. False changes nothing, and the run id leaves it out.
    also_stochastic: bool = False


@dataclass
class ClusterSecurityConfig:
    """TLS to a remote scheduler (``cluster=address``), as Dask's ``distributed.security.Security``.

    Dask's TLS is mutual: the scheduler and the workers check the client's certificate against the
    same CA, and the client checks theirs. Setting any ``tls_*`` path (or ``require_encryption``)
    makes the client refuse anything but a ``tls://`` address. The embedded ``cluster=local``
    needs none of this: it listens on 127.0.0.1 only.
    """

    tls_ca_file: str | None = None  # PEM CA that signed the scheduler's and workers' certificates
    tls_client_cert: str | None = None  # PEM certificate of this client (may hold the key too)
    tls_client_key: str | None = None  # PEM private key, when not inside tls_client_cert
    require_encryption: bool = False  # refuse plain tcp:// even with no tls_* path set


@dataclass
class ClusterConfig:
    """Where rollouts (ES) or whole runs (RL, sweeps) execute."""

    # processes: esbench starts `dask scheduler` + n_workers `dask worker` processes on 127.0.0.1
    # (the multi-process scheduler path of a real cluster, on one machine; esbench.runtime.processes)
    kind: str = _c("local", choices=("local", "address", "slurm", "processes"))
    n_workers: int | None = _c(None, ge=1)  # local, processes: default one per core
    threads_per_worker: int = _c(1, ge=1)
    address: str | None = None  # kind=address: tcp:// or tls://HOST:PORT of a running `dask scheduler`
    connect_timeout_s: float = _c(10.0, gt=0.0)
    security: ClusterSecurityConfig = field(default_factory=ClusterSecurityConfig)  # kind=address: TLS
    # local: serve the Dask dashboard on 127.0.0.1 (when bokeh is installed); false: no HTTP at all
    dashboard: bool = True
    memory_limit: str = "auto"
    worker_profile: bool = False  # Dask's per-worker stack sampler (costs rollouts 5-10%); local/slurm
    # local: how often Dask's servers poll memory, system load and event-loop health (Dask's own
    # 0.1 s / 0.5 s / 20 ms took the driver ~4% of a core, time a rollout on that core lost)
    monitor_interval_s: float = _c(1.0, gt=0.0)
    # kind=slurm (dask-jobqueue SLURMCluster; esbench.runtime.slurm). One SLURM job = one node's
    # share: `cores` CPUs and `memory`, running `processes` single-threaded workers (default: cores).
    queue: str | None = None  # #SBATCH -p (partition)
    account: str | None = None  # #SBATCH -A
    cores: int = _c(1, ge=1)  # CPUs per job (#SBATCH --cpus-per-task)
    processes: int | None = _c(None, ge=1)  # worker processes per job (default: cores, 1 thread each)
    memory: str = "4GB"  # per job (#SBATCH --mem)
    walltime: str = "01:00:00"  # #SBATCH -t
    jobs: int = _c(1, ge=1)  # jobs to submit (fixed size); ignored when maximum_jobs is set
    minimum_jobs: int = _c(0, ge=0)  # adaptive: never fewer jobs than this
    maximum_jobs: int | None = _c(None, ge=1)  # set: adapt between minimum_jobs and maximum_jobs
    job_name: str = "esbench"  # #SBATCH -J
    job_extra_directives: list[str] = field(default_factory=list)  # e.g. ["--qos=normal", "--exclusive"]
    job_script_prologue: list[str] = field(default_factory=list)  # e.g. ["module load python/3.11"]
    worker_extra_args: list[str] = field(default_factory=list)  # e.g. ["--lifetime", "55m"]
    local_directory: str | None = None  # node-local scratch for workers, e.g. "$TMPDIR"
    log_directory: str | None = None  # where SLURM writes each job's stdout/stderr
    interface: str | None = None  # network interface of scheduler and workers, e.g. "ib0", "eth0"
    python: str | None = None  # the Python on the nodes (default: this one, sys.executable)
    worker_wait_s: float | None = _c(None, gt=0.0)  # slurm: give up if no worker starts in time


@dataclass
class TrackerConfig:
    """Run tracking: the local results store always; W&B and console when enabled."""

    wandb: bool = True
    mode: str = _c("offline", choices=("offline", "online", "disabled"))
    project: str = "esbench"
    entity: str | None = None
    tags: list[str] = field(default_factory=list)
    console: bool = True  # progress line with timesteps, best return, steps/s
    # Seconds wandb.init may wait for the server (online) before the run goes on without W&B;
    # wandb's own default is 90 s per run, which with no network stalls a sweep for an hour.
    init_timeout_s: float = _c(15.0, gt=0.0)
    # Seconds run.finish may spend uploading (online) before it gives up; what is left stays on
    # disk for `wandb sync`. wandb's own default waits for ever.
    finish_timeout_s: float = _c(120.0, gt=0.0)
    # Seconds one HTTP request to W&B (GraphQL, file upload) may take.
    http_timeout_s: float = _c(30.0, gt=0.0)
    # Log each finished run's config, metrics, summary and checkpoint as artifact run-<run_id>.
    artifacts: bool = True


@dataclass
class StageConfig:
    """One stage of a task sequence: its name, its training budget and how its env differs."""

    name: str = MISSING
    # Training timesteps of this stage; 0 only on env=lm, for the task the cached prior learned.
    timesteps: int = _c(100_000, ge=0)
    # Overrides of the run's ``env`` for this stage (kwargs, dynamics, ...).
    env: dict[str, Any] = field(default_factory=dict)


@dataclass
class SequenceConfig:
    """A sequence of stages trained one after the other, every stage evaluated all along.

    ``name: none`` (no stages) is the ordinary run: one stage, ``env``, ``budget.timesteps``. A
    sequence's first stage is its ``env``; stage k starts from stage k-1's final parameters.
    """

    name: str = "none"
    stages: list[StageConfig] = field(default_factory=list)
    # The optimizer's and observation normalization's state at a stage boundary: reset (Continual
    # World's default) or carried over.
    reset_optimizer: bool = True
    reset_obs_norm: bool = True
    stage_timesteps: int | None = _c(None, ge=1)  # when set, every stage's budget (recipes' scales)
    # Append stage k's one-hot id to the observation on every stage (Continual World's convention),
    # so one policy can solve stages whose rewards conflict; the observation grows by the stage count.
    stage_id_obs: bool = False
    only_stage: int | None = _c(None, ge=0)  # train only stage k from scratch: a reference run


@dataclass
class InitConfig:
    """Where a run's first trained stage starts from (docs/training.md, "Starting from a given
    policy"): its own initialization (both unset), another run's parameters at a stage boundary
    (``from_run``: ``<run dir>[:<stage>]``), or a parameter file (``params``)."""

    from_run: str | None = None  # <run dir>[:<stage index or name>]; the base's last stage without one
    params: str | None = None  # an .npz with "params" (the ruler's MLP, flat) and optional "obs_*"
    log_std: float | None = None  # SB3: the Gaussian policy's initial log std; None: the algorithm's own
    value_warmup_steps: int = _c(10_000, ge=0)  # SB3: base-policy steps the value net is fitted on
    value_warmup_epochs: int = _c(10, ge=1)  # passes over each warm-up rollout
    value_warmup_lr: float = _c(1e-3, gt=0.0)  # Adam on the value network alone
    value_warmup_batch_size: int = _c(64, ge=1)


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
    sequence: SequenceConfig = field(default_factory=SequenceConfig)
    # env=lm only (conf/env/lm.yaml fills it): model, tasks, pretraining, decoding. Unset (None)
    # elsewhere, and then left out of the run's config hash, so other runs keep their run ids.
    lm: Optional[LMConfig] = None  # noqa: UP045 (OmegaConf reads the annotation at run time)
    # A given starting policy (conf/init/); unset, it is left out of the config hash.
    init: InitConfig = field(default_factory=InitConfig)
    seed: int = _c(0, ge=0)
    experiment: str = "default"  # results/runs/<experiment>/<run_id>/
    results_dir: str = "results/runs"
    run_id: str | None = None  # default: derived from algo, env, seed and a hash of the config
    checkpoint_every: int = _c(10, ge=1)  # ES: generations between checkpoints
    resume: bool = True  # resume from a checkpoint / skip a complete run with the same run_id
    torch_threads: int = _c(1, ge=1)


def register_configs() -> None:
    """Store the run schema in Hydra's ConfigStore (idempotent). Algorithm schemas are stored by
    :func:`esbench.config.registry.register_algorithm` when their module registers."""
    ConfigStore.instance().store(name="run_schema", node=RunConfig)


def stop_at_return(cfg: Any) -> float | None:
    """The score at which this run stops (``budget.stop_at_return_by_env[env.id]``, else
    ``budget.stop_at_return``), or None to run the whole budget."""
    by_env = cfg.budget.get("stop_at_return_by_env") or {}
    env_id = str(cfg.env.id)
    if env_id in by_env:
        return float(by_env[env_id])
    value = cfg.budget.get("stop_at_return")
    return None if value is None else float(value)
