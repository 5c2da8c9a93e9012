"""The one ruler: the metrics schema shared by every algorithm (ES and RL alike).

DESIGN.md promise 3: ES and RL runs are measured on one ruler. Every run directory holds a
``metrics.csv`` whose columns are exactly :data:`METRIC_COLUMNS`, in that order, so that a report
can put an ES curve and an RL curve on one axis with no conversion. A row is one logging step:
one ES generation, or one RL logging interval; at an evaluation point of a task sequence, one row
per evaluated stage (``train_task`` the stage trained, ``eval_task`` the stage evaluated; the data
model of :mod:`esbench.analysis.retention`, rows built by :mod:`esbench.training.ruler`).
Values a step does not have (an evaluation that did not happen at this step) are left empty (NaN).

Layout of a run directory (``results/runs/<experiment>/<run_id>/``)::

    config.yaml     the resolved run config (what makes the run a pure function)
    metrics.csv     one row per step, columns METRIC_COLUMNS
    summary.json    SUMMARY_KEYS, written once when the run completes (its presence = complete)
    env.json        package versions, git commit, cores, host, python
    checkpoint.npz  the latest checkpoint (strategy/model state + metrics rows so far), data only:
                    arrays and a JSON manifest (esbench.utils.statefile), never a pickle
    snapshots.npz   the parameters at the stage boundaries (esbench.training.ruler.write_snapshots;
                    read with esbench.analysis.retention.load_snapshots): ``params`` (K + 1, n_params)
                    float32, row k the flat vector at the start of stage k, row K the final one (a run
                    still going holds the rows of the stages begun so far); ``boundaries`` (T_k of
                    the stages ended, int64); ``stages`` (names); ``layout_starts`` and
                    ``layout_shapes`` (JSON) when the policy has a layer layout. RL baselines' vector
                    is the SB3 policy's ``state_dict`` values in order (actor, critic and, for DQN,
                    target network), ES's the policy's flat parameters
    snapshot_drift.csv the drift between every pair of snapshot rows, whole and per layer (written
                    with snapshots.npz; esbench.tracking.snapshot_drift): what a report's
                    data/ ships when the snapshots are too large to (a language model's)
    stage_states.npz the states each ended stage's final policy visited there and its action
                    distributions on them, for the ``policy_kl`` column (esbench.tracking.stage_states;
                    only for a sequence, once a stage with a later one has ended)
    probes.npz      a sequence's behavioural probes: per stage, the action distributions of the
                    policy the stage started from on that stage's probe states, and of the policy
                    that ended every stage on every probe set so far (read with
                    esbench.tracking.probes.load_probes)
    probe_states.npz the probe states themselves (the stage-start policy's visited observations)
    wandb/          the W&B run files (offline mode: `wandb sync` them later)
"""

from __future__ import annotations

METRIC_COLUMNS: tuple[str, ...] = (
    "generation",  # ES generation index, or RL logging-step index (0-based)
    "timesteps",  # cumulative environment steps actually taken for training (agent steps)
    "frames",  # cumulative emulator frames (= timesteps * frame_skip on Atari, = timesteps otherwise)
    "episodes",  # cumulative training episodes finished
    "wall_clock_s",  # seconds since training started (cluster start-up excluded), resumes included
    "cpu_s",  # cumulative CPU-seconds spent by the rollouts/learner (all workers)
    "train_return_mean",  # mean undiscounted return of training episodes in this step
    "train_return_max",  # best training-episode return in this step
    "eval_return_mean",  # mean return on the fixed evaluation seeds, acting as eval.policy says
    "eval_return_std",  # its standard deviation over evaluation episodes
    "eval_timesteps",  # cumulative environment steps spent on evaluation (not counted in timesteps)
    "steps_per_s",  # training throughput: timesteps / wall_clock_s
    "workers",  # worker processes the run used at this step
    "train_task",  # the stage trained on (its name; the env id for a run without a sequence)
    "eval_task",  # the stage evaluated on this row (every stage is evaluated at every point)
    "nonfinite_members",  # ES: population members excluded for NaN/inf returns (0 for RL)
    "grad_norm",  # ES: norm of the estimated gradient; RL: empty
    "param_norm",  # L2 norm of the flat parameter vector after the step (empty where not known)
    # ES: what this step's Dask tasks carried, serialized as Dask ships it (esbench.runtime.wire):
    "bytes_to_workers",  # task payloads (spec, sync message, members) and snapshots; RL: empty
    "bytes_from_workers",  # task results (returns, lengths, observation sums); RL: empty
    "snapshots_sent",  # tasks re-sent with a full state to a new, restarted or lagging worker
    # Drift at an evaluation point (esbench.training.drift), empty on rows without an evaluation.
    # Of the parameters from the last stage-boundary snapshot (the start of the stage trained; the
    # initial parameters in stage 0), Δ = θ - θ_b, the same on every row of a point:
    "drift_l2",  # ||Δ||_2
    "drift_rel",  # ||Δ||_2 / ||θ_b||_2
    "drift_sparsity_1e-6",  # mean(|Δ| <= 1e-6): the fraction of parameters (nearly) unchanged
    "drift_sparsity_1e-4",  # mean(|Δ| <= 1e-4)
    # Of the policy, on the row evaluating an ended stage k (empty until k ends and without a later
    # stage): mean over the states the stage-k-end policy visited on stage k of
    # KL(π_{end of k} || π_now) (categorical from logits, or Gaussian; ES continuous: std 0.01)
    "policy_kl",
    # Language models (env=lm, esbench.training.lm), empty elsewhere. On every row of a point:
    "solve_rate",  # the evaluated task's exact-solve rate (eval_return_mean adds the format score)
    "prior_accuracy",  # task A (the prior capability): held-out accuracy, greedy
    "prior_loss",  # task A: held-out cross-entropy per answer token, teacher forced
    "prior_kl",  # KL(task-A model || model) of next-token distributions on task-A answer positions
    # Stop at a target (budget.stop_at_return; esbench.training.ruler.Confirmation): on the row
    # evaluating the stage trained, at a point whose eval_return_mean reached the target, the same
    # parameters on budget.confirm_episodes fresh evaluation seeds. Empty at every other point.
    "confirm_return_mean",  # mean return of the confirmation episodes
    "confirm_return_std",  # their standard deviation
    "confirmed",  # 1: the confirmation reached the target too (the run stopped here); 0: it did not
    # eval.also_stochastic: on the row evaluating the stage trained, at every point, the same seeds
    # with the policy acting stochastically (RL: sampled; ES: Gaussian action noise of
    # algo.action_noise_std). Empty without it.
    "eval_stochastic_return_mean",
    "eval_stochastic_return_std",
)

#: The metrics columns of parameter drift from the last stage-boundary snapshot (values:
#: :func:`esbench.measures.drift.param_drift` at :data:`~esbench.measures.drift.SPARSITY_THRESHOLDS`).
DRIFT_COLUMNS: tuple[str, ...] = ("drift_l2", "drift_rel", "drift_sparsity_1e-6", "drift_sparsity_1e-4")
#: The metrics column of policy drift on an ended stage's states.
KL_COLUMN = "policy_kl"

#: Columns that depend on where and how fast a run executes, not on what it computes: a run
#: repeated with other workers, resumed, or with a worker lost or added mid-run has the same rows
#: apart from these (DESIGN.md promise 1; the determinism tests compare everything else).
EXECUTION_COLUMNS: tuple[str, ...] = (
    "wall_clock_s",
    "cpu_s",
    "steps_per_s",
    "workers",
    "bytes_to_workers",
    "bytes_from_workers",
    "snapshots_sent",
)

SUMMARY_KEYS: tuple[str, ...] = (
    "status",  # "complete"
    "run_id",
    "experiment",
    "algo",
    "env_id",
    "seed",
    "scale",
    "final_eval_return",  # eval_return_mean of the last evaluation
    "best_eval_return",
    "total_timesteps",
    "total_frames",
    "total_episodes",
    "wall_clock_s",
    "cpu_s",
    "steps_per_s",  # training throughput, cluster start-up excluded
    "workers",
    "params_sha256",  # sha256 of the final flat parameter vector's bytes (float32, C order)
    "stopped_at_return",  # ended at its first evaluation >= budget.stop_at_return (reached, not censored)
    "stop_at_return",  # the target score, or None
)

#: Keys every summary also holds (esbench.training.ruler.summary), list- or dict-valued, so kept out
#: of the runs table that :mod:`esbench.analysis.load` builds from :data:`SUMMARY_KEYS`.
SEQUENCE_SUMMARY_KEYS: tuple[str, ...] = (
    "resumed_from",  # ES: generations, RL: timesteps at which the run resumed from a checkpoint
    "sequence",  # sequence.name ("none" without a sequence)
    "stages",  # the stage names trained, in order (one: the env id, without a sequence)
    "stage_timesteps",  # each stage's budget
    "stage_boundaries",  # T_k: the cumulative timesteps at which each stage ended
    "stage_wall_clock_s",  # the wall-clock seconds at which each stage ended
    "final_eval_return_by_stage",  # {stage: its last evaluation}
)

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.csv"
SUMMARY_FILE = "summary.json"
ENV_FILE = "env.json"
#: The plan a run was launched under (``esbench reproduce`` writes it:
#: :meth:`~esbench.tracking.store.RunStore.record_plan`).
PLAN_FILE = "plan.json"
CHECKPOINT_FILE = "checkpoint.npz"
SNAPSHOTS_FILE = "snapshots.npz"
SNAPSHOT_DRIFT_FILE = "snapshot_drift.csv"
STAGE_STATES_FILE = "stage_states.npz"
PROBES_FILE = "probes.npz"
PROBE_STATES_FILE = "probe_states.npz"
OBS_NORM_FILE = "obs_norm.npz"  # the observation normalization at each stage boundary
#: Where esbench before data-only checkpoints kept a pickle. Never loaded (unpickling runs code);
#: a run directory holding one refuses to resume and says so.
LEGACY_CHECKPOINT_FILE = "checkpoint.pkl"


def empty_row() -> dict[str, object]:
    """A metrics row with every column present and unset (NaN for numbers, "" for tasks)."""
    row: dict[str, object] = {c: float("nan") for c in METRIC_COLUMNS}
    row["train_task"] = ""
    row["eval_task"] = ""
    return row
