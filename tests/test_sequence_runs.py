"""Task sequences end to end (issue #14 parts 2-3) and the RL half of issue #15 (timestep-0
evaluation, stop at a target), through the real CLI, a real Dask LocalCluster and SB3.

The rows follow the data model of :mod:`esbench.analysis.retention` (read back with its own
functions), the stage-boundary snapshots are the parameters the stages really ended with (checked
against independent single-stage runs), and ES and RL go through one ruler
(:mod:`esbench.training.ruler`).

"Drift is exactly zero and forgetting is zero when a later stage's budget is zero" (issue #14): a
stage budget of zero is refused by config (issue #14 part 7: exit 2), so no run can have one.
The nearest honest thing, tested here, is the run at the instant its later stage begins, i.e. a
later stage that has trained zero timesteps so far: its rows up to the end of stage 0 and its
snapshots with the final row = the stage-1 start row. Both are what the loop wrote (not made up),
the snapshot is checked to be the parameters stage 0 ended with (equal to an independent run of
stage 0 alone), and the retention metrics on them must give drift and forgetting exactly 0: the
boundary itself (env switch, optimizer reset, carry-over of parameters) moves nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.retention import load_snapshots, param_drift, run_retention, sequence_curves
from esbench.tracking.schema import DRIFT_COLUMNS, KL_COLUMN, METRIC_COLUMNS
from esbench.tracking.snapshot_drift import SnapshotDrift
from esbench.tracking.stage_states import load_stage_states
from tests.conftest import SMALL, esbench, only_run_dir, read_run

STAGES = ["default", "long_pole"]
SEQ = ["sequence=cartpole_pair", "eval.episodes=3", "tracker=none", "tracker.console=false"]
ES = ["algo=openai_es", *SEQ, *SMALL[2:], "sequence.stage_timesteps=3000", "eval.interval_timesteps=2000"]
RL = ["algo=a2c", *SEQ, "sequence.stage_timesteps=1500", "eval.interval_timesteps=1000"]


def _sha(vector: np.ndarray) -> str:
    """What summaries call ``params_sha256``: sha256 of the float32 vector's bytes."""
    return hashlib.sha256(np.ascontiguousarray(vector, dtype=np.float32).tobytes()).hexdigest()


def check_data_model(run_dir: Path, stages: list[str]) -> tuple[pd.DataFrame, dict]:
    """The rows and snapshots of a complete sequence run follow the data model; returns them."""
    metrics = pd.read_csv(run_dir / "metrics.csv")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert list(metrics.columns) == list(METRIC_COLUMNS)
    evals = metrics[metrics["eval_return_mean"].notna()]
    # Every stage evaluated at every evaluation point, once, in stage order.
    for _, point in evals.groupby(["timesteps", "train_task"], sort=False):
        assert list(point["eval_task"]) == stages
    assert set(metrics["train_task"]) == set(stages)
    # A point at timestep 0 (the untrained policy, stage 0 trained) and one at the end of every stage.
    first = evals[evals["timesteps"] == 0]
    assert list(first["train_task"]) == [stages[0]] * len(stages) and (first["generation"] == 0).all()
    assert summary["stages"] == stages
    ends = [int(metrics.loc[metrics["train_task"] == s, "timesteps"].max()) for s in stages]
    assert summary["stage_boundaries"] == ends
    for stage, end in zip(stages, ends, strict=True):
        at_end = evals[(evals["timesteps"] == end) & (evals["train_task"] == stage)]
        assert list(at_end["eval_task"]) == stages, (stage, end)
    assert summary["total_timesteps"] == ends[-1]
    assert ends[0] - 0 >= summary["stage_timesteps"][0]  # every stage trains its whole budget
    assert all(b - a >= t for a, b, t in zip(ends, ends[1:], summary["stage_timesteps"][1:], strict=False))
    assert len(summary["stage_wall_clock_s"]) == len(stages)
    # The retention functions read it as it is.
    curves = sequence_curves(metrics, stages)
    assert curves.returns.shape == (len(stages), evals.groupby(["timesteps", "train_task"]).ngroups)
    np.testing.assert_array_equal(curves.boundaries, ends)
    # Snapshots: (K + 1, n), the last row the final parameters.
    snaps = load_snapshots(run_dir / "snapshots.npz")
    assert snaps.params.shape[0] == len(stages) + 1
    assert list(snaps.stages) == stages
    np.testing.assert_array_equal(snaps.boundaries, ends)
    assert _sha(snaps.params[-1]) == summary["params_sha256"]
    assert snaps.layout is not None
    # Drift at every point (esbench.training.drift): from the start of the stage trained, so 0 at
    # timestep 0 and, at the end of stage 0, the snapshots' own update of stage 0.
    assert evals[list(DRIFT_COLUMNS)].notna().all().all()
    assert metrics.loc[metrics["eval_return_mean"].isna(), list(DRIFT_COLUMNS)].isna().all().all()
    assert (first["drift_l2"] == 0.0).all() and (first["drift_sparsity_1e-6"] == 1.0).all()
    end0 = evals[(evals["timesteps"] == ends[0]) & (evals["train_task"] == stages[0])].set_index("eval_task")
    assert end0.loc[stages[0], "drift_l2"] == pytest.approx(
        param_drift(snaps.params[1], snaps.params[0])["l2"]
    )
    if len(stages) == 1:  # a single stage (a reference run): no later stage, so no KL at all
        assert metrics[KL_COLUMN].isna().all()
        assert not (run_dir / "stage_states.npz").exists()
        return metrics, summary
    # Policy KL on stage 0's states from the policy that ended it: 0 there, logged from then on on
    # stage 0's rows, never on the last stage's (no later stage to compare with).
    assert end0.loc[stages[0], KL_COLUMN] == 0.0
    assert evals.loc[evals["timesteps"] < ends[0], KL_COLUMN].isna().all()
    assert evals.loc[evals["eval_task"] == stages[-1], KL_COLUMN].isna().all()
    later = evals[(evals["train_task"] == stages[1]) & (evals["eval_task"] == stages[0])][KL_COLUMN]
    assert len(later) and later.notna().all() and (later >= 0).all() and later.iloc[-1] > 0
    recorded_all = load_stage_states(run_dir / "stage_states.npz")  # every stage but the last
    assert [r.stage for r in recorded_all] == stages[:-1]
    assert all(1 <= len(r.states) <= 256 for r in recorded_all)
    return metrics, summary


@pytest.fixture(scope="module")
def es_sequence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of the ES sequence on 1 worker: run once, read (never changed) by the
    tests below."""
    root = tmp_path_factory.mktemp("es-sequence")
    esbench("run", *ES, "cluster.n_workers=1", f"results_dir={root}")
    return only_run_dir(root)


def test_es_sequence_end_to_end_same_numbers_on_one_and_two_workers(
    tmp_path: Path, es_sequence: Path
) -> None:
    """openai_es on cartpole_pair: the data model; snapshot[1] is what stage 0 ended with (an
    independent run of stage 0 alone ends with the same parameters and return); 1 and 2 workers
    give the same rows, snapshots and parameters."""
    esbench("run", *ES, "cluster.n_workers=2", f"results_dir={tmp_path / 'w2'}")
    runs = {1: es_sequence, 2: only_run_dir(tmp_path / "w2")}
    metrics, summary = check_data_model(runs[1], STAGES)
    (m1, s1), (m2, s2) = read_run(runs[1]), read_run(runs[2])
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]
    assert (s1["workers"], s2["workers"]) == (1, 2)
    snaps = load_snapshots(runs[1] / "snapshots.npz").params
    np.testing.assert_array_equal(snaps, load_snapshots(runs[2] / "snapshots.npz").params)
    assert not np.array_equal(snaps[1], snaps[0]) and not np.array_equal(snaps[2], snaps[1])
    for probes in ("probes.npz", "probe_states.npz"):  # behavioural probes: a function of the config
        assert (runs[1] / probes).read_bytes() == (runs[2] / probes).read_bytes()

    # Stage 0 alone (no sequence, the same env and budget): the parameters it ends with are the
    # sequence's snapshot[1], and its last evaluation is the sequence's stage-0 row at T_0.
    esbench("run", "algo=openai_es", "env=cartpole", "budget.timesteps=3000", "eval.interval_timesteps=2000",
            "eval.episodes=3", "tracker=none", "tracker.console=false", *SMALL[2:],
            f"results_dir={tmp_path / 'alone'}")  # fmt: skip
    alone_metrics, alone = read_run(only_run_dir(tmp_path / "alone"))
    assert _sha(snaps[1]) == alone["params_sha256"]
    t0 = summary["stage_boundaries"][0]
    end0 = metrics[(metrics["timesteps"] == t0) & (metrics["eval_task"] == "default")]
    assert end0["eval_return_mean"].item() == alone["final_eval_return"]
    assert alone_metrics["train_task"].eq("CartPole-v1").all()  # no sequence: the env id names the stage
    assert not (only_run_dir(tmp_path / "alone") / "probes.npz").exists()  # probes: sequences only


def test_zero_budget_so_far_gives_zero_drift_and_zero_forgetting(es_sequence: Path) -> None:
    """See the module docstring: the sequence at the instant stage 1 begins."""
    run_dir = es_sequence
    metrics = pd.read_csv(run_dir / "metrics.csv")
    snaps = load_snapshots(run_dir / "snapshots.npz")
    t0 = json.loads((run_dir / "summary.json").read_text())["stage_boundaries"][0]
    so_far = metrics[metrics["train_task"] == "default"]  # stage 1 has trained nothing yet
    curves = sequence_curves(so_far, STAGES)
    assert curves.boundaries.tolist() == [t0, t0]  # a stage without rows ends where the last did
    at_boundary = np.stack([snaps.params[0], snaps.params[1], snaps.params[1]])
    r_random = curves.returns[:, 0]
    table = run_retention(curves, r_random, r_random + 100.0, drift=SnapshotDrift.of(at_boundary), last_k=1)
    value = table.set_index(["stage_index", "metric"])["value"]
    assert value[(0, "forgetting")] == 0.0
    assert value[(0, "drift_l2")] == 0.0 and value[(0, "drift_sparsity@1e-06")] == 1.0
    assert value[(0, "update_l2")] > 0  # stage 0 did train: the zeros are not vacuous
    # And in the full run, stage 1's training is what moves stage 0: drift > 0 once it has trained.
    full = run_retention(
        sequence_curves(metrics, STAGES), r_random, r_random + 100.0, drift=SnapshotDrift.of(snaps.params)
    )
    assert full.set_index(["stage_index", "metric"])["value"][(0, "drift_l2")] > 0


def test_only_stage_is_a_reference_run_from_scratch(tmp_path: Path, es_sequence: Path) -> None:
    """``sequence.only_stage=1``: stage 1 alone, from the seed's initial parameters (the sequence's
    snapshot[0]), on its own budget, evaluated on itself only."""
    esbench("run", *ES, "sequence.only_stage=1", "cluster.n_workers=1", f"results_dir={tmp_path / 'ref'}")
    ref_dir, seq_dir = only_run_dir(tmp_path / "ref"), es_sequence
    metrics, summary = check_data_model(ref_dir, ["long_pole"])
    assert summary["only_stage"] == 1 and summary["stage_timesteps"] == [3000]
    ref, seq = load_snapshots(ref_dir / "snapshots.npz"), load_snapshots(seq_dir / "snapshots.npz")
    np.testing.assert_array_equal(ref.params[0], seq.params[0])
    # The t=0 evaluation on long_pole is the sequence's (same untrained policy, same seeds).
    seq_metrics = pd.read_csv(seq_dir / "metrics.csv")
    at0 = seq_metrics[(seq_metrics["timesteps"] == 0) & (seq_metrics["eval_task"] == "long_pole")]
    assert metrics.loc[metrics["timesteps"] == 0, "eval_return_mean"].item() == at0["eval_return_mean"].item()


def test_rl_sequence_end_to_end(tmp_path: Path) -> None:
    """a2c on cartpole_pair: the data model, and snapshot[1] is the parameters an independent run of
    stage 0 alone ends with (the next stage's model starts from them)."""
    esbench("run", *RL, f"results_dir={tmp_path / 'seq'}")
    run_dir = only_run_dir(tmp_path / "seq")
    metrics, summary = check_data_model(run_dir, STAGES)
    assert summary["stopped_at_return"] is False and summary["resumed_from"] == []
    snaps = load_snapshots(run_dir / "snapshots.npz").params
    assert not np.array_equal(snaps[2], snaps[1])
    esbench("run", "algo=a2c", "env=cartpole", "budget.timesteps=1500", "eval.interval_timesteps=1000",
            "eval.episodes=3", "tracker=none", "tracker.console=false",
            f"results_dir={tmp_path / 'alone'}")  # fmt: skip
    _, alone = read_run(only_run_dir(tmp_path / "alone"))
    assert _sha(snaps[1]) == alone["params_sha256"]
    end0 = metrics[
        (metrics["timesteps"] == summary["stage_boundaries"][0]) & (metrics["eval_task"] == "default")
    ]
    assert end0["eval_return_mean"].item() == alone["final_eval_return"]


#: One tiny CartPole run per RL baseline for the timestep-0 test (budgets just past one evaluation).
RL_T0 = {
    "a2c": ["budget.timesteps=1000", "eval.interval_timesteps=500"],
    "trpo": ["budget.timesteps=1024", "eval.interval_timesteps=512"],
    "ppo": ["budget.timesteps=1024", "eval.interval_timesteps=512"],
    "dqn": ["budget.timesteps=1000", "eval.interval_timesteps=500"],
}


#: RL baselines whose timestep-0 test runs by default: one on-policy and DQN (its own evaluation
#: protocol and replay start); TRPO and PPO share A2C's path through the sequence loop and run with
#: the slow tests.
RL_T0_DEFAULT = ("a2c", "dqn")


@pytest.mark.parametrize(
    "algo", [a if a in RL_T0_DEFAULT else pytest.param(a, marks=pytest.mark.slow) for a in sorted(RL_T0)]
)
def test_rl_timestep_zero_row_is_the_untrained_policy(algo: str, tmp_path: Path) -> None:
    """Issue #15, every RL baseline: the first row is generation 0 at timestep 0, and its return is
    the untrained model's on the fixed evaluation seeds, computed here independently of the run
    (same model construction, same evaluation protocol)."""
    from stable_baselines3.common.vec_env import unwrap_vec_normalize

    from esbench.baselines.configs import resolve_hparams
    from esbench.baselines.evaluation import evaluate
    from esbench.baselines.sb3 import build_model, make_training_env
    from esbench.config.compose import compose_run_config
    from esbench.config.eval_protocol import eval_protocol
    from esbench.envs import make_env
    from esbench.runner import load_components

    args = [f"algo={algo}", "env=cartpole", *RL_T0[algo], "eval.episodes=3", "tracker=none",
            "tracker.console=false"]  # fmt: skip
    esbench("run", *args, f"results_dir={tmp_path}")
    metrics, summary = read_run(only_run_dir(tmp_path))
    first = metrics.iloc[0]
    assert (first["generation"], first["timesteps"], first["episodes"]) == (0, 0, 0)
    assert np.isnan(first["train_return_mean"])
    load_components()
    cfg = compose_run_config(args)
    hp = resolve_hparams(cfg)
    venv = make_training_env(cfg, hp)
    model = build_model(cfg, hp, venv)
    env = make_env(cfg.env, training=False)
    mean, std, _ = evaluate(
        model, env, int(cfg.eval.seed), 3, unwrap_vec_normalize(venv),
        protocol=eval_protocol(cfg), run_seed=int(cfg.seed), timestep=0,
    )  # fmt: skip
    assert (first["eval_return_mean"], first["eval_return_std"]) == (mean, std)
    assert metrics["timesteps"].is_monotonic_increasing and len(metrics) >= 3  # then the schedule
    assert metrics["timesteps"].iloc[-1] == summary["total_timesteps"] >= int(RL_T0[algo][0].split("=")[1])


#: ES variants whose timestep-0 test runs by default (~5-10 s each); the rest of the registry runs
#: with the slow tests (every variant goes through the same sequence loop).
ES_T0_DEFAULT = ("openai_es",)


def _es_keys() -> list[object]:
    """Every registered ES variant (the registry fills as the strategy modules import), those
    outside :data:`ES_T0_DEFAULT` marked slow."""
    import esbench.strategies  # noqa: F401 - registers every variant
    from esbench.config.registry import algorithms

    return [
        key if key in ES_T0_DEFAULT else pytest.param(key, marks=pytest.mark.slow)
        for key in sorted(algorithms("es"))
    ]


@pytest.mark.parametrize("algo", _es_keys())
def test_es_timestep_zero_row_is_the_untrained_policy(algo: str, tmp_path: Path) -> None:
    """Issue #15 for every ES variant in the registry: row 0 is generation 0 at timestep 0 with the
    initial parameters' return on the fixed evaluation seeds, recomputed here in-process from the
    seed alone."""
    from esbench.config.compose import compose_run_config
    from esbench.runner import load_components
    from esbench.runtime.replica import SyncMessage, state_digest
    from esbench.runtime.worker import RunContext, RunSpec, evaluate_chunk

    args = [f"algo={algo}", "env=cartpole", *SMALL[2:], "budget.timesteps=3000",
            "eval.interval_timesteps=2000", "eval.episodes=3", "tracker=none",
            "tracker.console=false"]  # fmt: skip
    esbench("run", *args, f"results_dir={tmp_path}")
    metrics, _ = read_run(only_run_dir(tmp_path))
    first = metrics.iloc[0]
    assert (first["generation"], first["timesteps"], first["episodes"]) == (0, 0, 0)
    load_components()
    spec = RunSpec.from_config(compose_run_config(args), f"t0-check-{algo}")  # contexts are cached by run id
    state = RunContext(spec).initial_state()
    result = evaluate_chunk(spec, SyncMessage(0, state_digest(state)), [0, 1, 2], "eval", snapshot=state)
    returns = result.returns[:, 0]
    assert (first["eval_return_mean"], first["eval_return_std"]) == (returns.mean(), returns.std())


STOP_RUNS = {
    "a2c": ["algo=a2c", "budget.timesteps=6000", "eval.interval_timesteps=1000", "seed=1"],
    "openai_es": ["algo=openai_es", *SMALL[2:], "budget.timesteps=30000", "eval.interval_timesteps=3000"],
}


CONFIRM_COLUMNS = ["confirm_return_mean", "confirm_return_std", "confirmed"]


@pytest.mark.parametrize(
    "algo",
    # RL's stop path also runs by default in test_rl_stop_at_target_reached_by_the_untrained_policy...
    [pytest.param(a, marks=pytest.mark.slow) if a == "a2c" else a for a in sorted(STOP_RUNS)],
)
def test_stops_at_the_first_confirmed_evaluation_at_or_above_the_target(algo: str, tmp_path: Path) -> None:
    """ES and RL alike: with budget.stop_at_return=v a point at or above v is confirmed on
    budget.confirm_episodes fresh seeds, and the run ends at the first point whose confirmation
    reaches v too (marked in the summary); an unconfirmed point is recorded (confirmed 0) and
    training goes on. Its rows are the full run's up to the stop (stopping changes nothing before
    it but the evaluation steps the confirmations took), and the same on 1 and 2 workers."""
    args = [*STOP_RUNS[algo], "env=cartpole", "eval.episodes=3", "tracker=none", "tracker.console=false"]
    esbench("run", *args, f"results_dir={tmp_path / 'full'}")
    full, full_summary = read_run(only_run_dir(tmp_path / "full"))
    assert full_summary["stopped_at_return"] is False and full_summary["stop_at_return"] is None
    assert full[CONFIRM_COLUMNS].isna().all().all()  # no target: no confirmation
    # A target the evaluations before miss and a later evaluation (not the last) reaches.
    evals = full[full["eval_return_mean"].notna()]
    returns = evals["eval_return_mean"].to_numpy()
    later = [i for i in range(1, len(returns) - 1) if returns[i] > returns[:i].max()]
    assert later, returns
    target = float(evals["eval_return_mean"].iloc[later[0]])
    runs = {}
    for workers in [1, 2] if algo == "openai_es" else [1]:
        out = tmp_path / f"stop{workers}"
        esbench("run", *args, f"budget.stop_at_return={target}", f"cluster.n_workers={workers}",
                f"results_dir={out}")  # fmt: skip
        runs[workers] = read_run(only_run_dir(out))
    stopped, summary = runs[1]
    if 2 in runs:
        pd.testing.assert_frame_equal(runs[2][0], stopped)  # the confirmations too
        assert runs[2][1]["params_sha256"] == summary["params_sha256"]
    points = stopped[stopped["eval_return_mean"].notna()]
    reached = points["eval_return_mean"] >= target
    assert points.loc[reached, "confirm_return_mean"].notna().all()  # every point at the target confirmed
    assert points.loc[~reached, CONFIRM_COLUMNS].isna().all().all()  # no other
    confirmed = points["confirmed"] == 1.0
    assert (confirmed == (reached & (points["confirm_return_mean"] >= target))).all()
    assert summary["stop_at_return"] == target
    assert summary["stopped_at_return"] is bool(confirmed.any())
    if confirmed.any():  # the run ends at its first confirmed point
        assert confirmed.sum() == 1 and stopped.index[-1] == points.index[confirmed.to_numpy()][0]
        assert summary["total_timesteps"] == stopped["timesteps"].iloc[-1] <= full_summary["total_timesteps"]
    else:  # never confirmed: the whole budget, like the full run
        assert summary["total_timesteps"] == full_summary["total_timesteps"]
    assert reached.any()
    same = [c for c in full.columns if c not in (*CONFIRM_COLUMNS, "eval_timesteps")]
    pd.testing.assert_frame_equal(stopped[same], full.loc[: stopped.index[-1], same])
    extra = (stopped["eval_timesteps"] - full.loc[: stopped.index[-1], "eval_timesteps"]).to_numpy()
    assert (np.diff(extra) >= 0).all() and extra[-1] > 0  # the confirmations' steps, counted as evaluation


def test_rl_stop_at_target_reached_by_the_untrained_policy_trains_nothing(tmp_path: Path) -> None:
    args = ["algo=a2c", "env=cartpole", "budget.timesteps=2000", "eval.interval_timesteps=1000",
            "eval.episodes=3", "tracker=none", "tracker.console=false",
            "budget.stop_at_return=-1"]  # fmt: skip
    esbench("run", *args, f"results_dir={tmp_path}")
    metrics, summary = read_run(only_run_dir(tmp_path))
    assert summary["stopped_at_return"] is True and summary["total_timesteps"] == 0
    assert len(metrics) == 1 and metrics["timesteps"].item() == 0


def test_stop_at_return_by_env_wins_for_its_env_only(tmp_path: Path) -> None:
    """budget.stop_at_return_by_env (what a recipe fills from published targets) names a score per
    env id: for this run's env it wins over budget.stop_at_return (here the untrained policy already
    reaches -1, so the ES run stops at timestep 0 and trains nothing); another env's entry leaves
    the run on budget.stop_at_return."""
    from esbench.config.compose import compose_run_config
    from esbench.config.schema import stop_at_return
    from esbench.runner import load_components

    args = ["algo=openai_es", "env=cartpole", *SMALL[2:], "budget.timesteps=3000",
            "eval.interval_timesteps=2000", "eval.episodes=3", "tracker=none", "tracker.console=false",
            "budget.stop_at_return=1000000"]  # fmt: skip
    esbench("run", *args, "+budget.stop_at_return_by_env.CartPole-v1=-1", f"results_dir={tmp_path}")
    metrics, summary = read_run(only_run_dir(tmp_path))
    assert summary["stopped_at_return"] is True and summary["stop_at_return"] == -1.0
    assert summary["total_timesteps"] == 0 and metrics["timesteps"].tolist() == [0]
    load_components()
    other = compose_run_config([*args, "+budget.stop_at_return_by_env.Hopper-v5=-1"])
    assert stop_at_return(other) == 1000000.0


def test_a_target_with_a_sequence_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = esbench("run", *ES, "budget.stop_at_return=100", f"results_dir={tmp_path}", check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "stop_at_return" in ln]
    assert len(lines) == 1 and "sequence.only_stage" in lines[0], proc.stderr[-2000:]
    assert not list(tmp_path.rglob("metrics.csv"))  # before any work


def test_wandb_logs_every_stage_under_its_own_namespace(tmp_path: Path) -> None:
    """Real W&B (offline): each stage's evaluations land under ``eval/<stage>/return_mean``, at the
    timesteps of the points; rows evaluating another stage than the one trained add nothing else."""
    from tests.test_wandb_tracking import offline_run

    args = [a for a in RL if not a.startswith("tracker=")]
    esbench("run", *args, "tracker=wandb_offline", f"results_dir={tmp_path}")
    run_dir = only_run_dir(tmp_path)
    history, exit_code = offline_run(run_dir)
    assert exit_code == 0
    metrics = pd.read_csv(run_dir / "metrics.csv")
    for stage in STAGES:
        key = f"eval/{stage}/return_mean"
        logged = [(h["timesteps"], h[key]) for h in history if key in h]
        rows = metrics[metrics["eval_task"] == stage]
        assert logged == list(zip(rows["timesteps"], rows["eval_return_mean"], strict=True)), stage
    foreign = [h for h in history if "eval/long_pole/return_mean" in h and "eval_return_mean" not in h]
    assert foreign and all(set(h) <= {"timesteps", "eval/long_pole/return_mean",
                                      "eval/long_pole/return_std", "_step", "_timestamp", "_runtime"}
                           for h in foreign)  # fmt: skip


def test_also_stochastic_adds_a_stochastic_evaluation_and_changes_nothing_else(tmp_path: Path) -> None:
    """eval.also_stochastic=true: every point also evaluates the stage trained with ES's training
    action noise (algo.action_noise_std) on the same seeds; the run's other numbers are the run
    without it (bar the evaluation steps it took), and the timestep-0 value is what the worker's
    ``eval_stochastic`` task gives for the untrained state."""
    from esbench.config.compose import compose_run_config
    from esbench.runner import load_components
    from esbench.runtime.replica import SyncMessage, state_digest
    from esbench.runtime.worker import RunContext, RunSpec, evaluate_chunk

    args = ["algo=openai_es", "env=inverted_pendulum", *SMALL[2:], "budget.timesteps=3000",
            "eval.interval_timesteps=1500", "eval.episodes=3", "tracker=none",
            "tracker.console=false"]  # fmt: skip
    esbench("run", *args, f"results_dir={tmp_path / 'plain'}")
    esbench("run", *args, "eval.also_stochastic=true", f"results_dir={tmp_path / 'both'}")
    plain, _ = read_run(only_run_dir(tmp_path / "plain"))
    both, _ = read_run(only_run_dir(tmp_path / "both"))
    stochastic = ["eval_stochastic_return_mean", "eval_stochastic_return_std"]
    assert plain[stochastic].isna().all().all()
    points = both["eval_return_mean"].notna()
    assert (
        both.loc[points, stochastic].notna().all().all() and both.loc[~points, stochastic].isna().all().all()
    )
    same = [c for c in plain.columns if c not in (*stochastic, "eval_timesteps")]
    pd.testing.assert_frame_equal(both[same], plain[same])
    assert (both.loc[points, "eval_timesteps"] > plain.loc[points, "eval_timesteps"]).all()
    load_components()
    spec = RunSpec.from_config(compose_run_config([*args, "eval.also_stochastic=true"]), "t0-stochastic")
    state = RunContext(spec).initial_state()
    msg = SyncMessage(0, state_digest(state))
    noisy = evaluate_chunk(spec, msg, [0, 1, 2], "eval_stochastic", snapshot=state).returns[:, 0]
    first = both.iloc[0]
    assert (first["eval_stochastic_return_mean"], first["eval_stochastic_return_std"]) == (
        noisy.mean(),
        noisy.std(),
    )


@pytest.mark.slow
def test_rl_also_stochastic_samples_the_policy_beside_the_deterministic_evaluation(tmp_path: Path) -> None:
    """The SB3 side of eval.also_stochastic: actions sampled from the policy (deterministic=False)
    on the same seeds, on every point's row of the stage trained; nothing else changes."""
    args = ["algo=a2c", "env=cartpole", "budget.timesteps=2000", "eval.interval_timesteps=1000",
            "eval.episodes=3", "tracker=none", "tracker.console=false"]  # fmt: skip
    esbench("run", *args, f"results_dir={tmp_path / 'plain'}")
    esbench("run", *args, "eval.also_stochastic=true", f"results_dir={tmp_path / 'both'}")
    plain, _ = read_run(only_run_dir(tmp_path / "plain"))
    both, _ = read_run(only_run_dir(tmp_path / "both"))
    stochastic = ["eval_stochastic_return_mean", "eval_stochastic_return_std"]
    assert both[stochastic].notna().all().all() and plain[stochastic].isna().all().all()
    same = [c for c in plain.columns if c not in (*stochastic, "eval_timesteps")]
    pd.testing.assert_frame_equal(both[same], plain[same])


CW10_STAGES = [
    "hammer", "push-wall", "faucet-close", "push-back", "stick-pull",
    "handle-press-side", "push", "shelf-place", "window-close", "peg-unplug-side",
]  # fmt: skip


@pytest.mark.slow
def test_cw10_runs_all_ten_stages_here(tmp_path: Path) -> None:
    """Continual World's ten tasks as one ES run on this machine (a tiny stage budget): every stage
    trained in CW's order and evaluated at every point, through the same data model as any sequence."""
    esbench(
        "run", "algo=openai_es", "sequence=cw10", *SMALL, "algo.population_size=4",
        "sequence.stage_timesteps=800", "eval.interval_timesteps=800", "eval.episodes=1",
        "cluster.n_workers=1", f"results_dir={tmp_path}",
    )  # fmt: skip
    run_dir = only_run_dir(tmp_path)
    metrics, summary = check_data_model(run_dir, CW10_STAGES)
    assert summary["sequence"] == "cw10" and len(summary["stage_boundaries"]) == 10
    assert summary["status"] == "complete" and set(metrics["train_task"]) == set(CW10_STAGES)
    # CW's one-hot task id follows Meta-World's 39 numbers: stage 0's states carry task 0's id.
    states = np.asarray(load_stage_states(run_dir / "stage_states.npz")[0].states)
    assert states.shape[1] == 39 + 10
    np.testing.assert_array_equal(states[:, 39:], np.tile(np.eye(10)[0], (len(states), 1)))


@pytest.mark.slow
def test_atari_mode_runs_both_difficulties_here(tmp_path: Path) -> None:
    """Pong, then Pong at difficulty 2, as one ES run with the A3C CNN (a tiny budget): both stages
    trained and evaluated at every point, through the same data model as any sequence."""
    esbench(
        "run", "algo=openai_es", "sequence=atari_mode", *SMALL, "algo.population_size=4",
        "sequence.stage_timesteps=400", "eval.interval_timesteps=400", "eval.episodes=1",
        "env.max_episode_steps=100", "env.eval_max_episode_frames=400", "cluster.n_workers=1",
        f"results_dir={tmp_path}",
    )  # fmt: skip
    run_dir = only_run_dir(tmp_path)
    _, summary = check_data_model(run_dir, ["difficulty_0", "difficulty_2"])
    assert summary["status"] == "complete" and summary["env_id"] == "ALE/Pong-v5"
