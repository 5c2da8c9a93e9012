"""The training package's own pieces on a hand-made learner: the walk through the stages
(:func:`esbench.training.loop.walk_stages`) and the resume checks written once for every learner
(:mod:`esbench.training.checkpoint`), the latter on a real results store.

The learner here is the smallest thing that satisfies the ``Learner`` protocol with a budget it
spends in known steps, so the order of every call the loop makes can be checked by hand, and so a
third learner can be seen plugging into the loop without touching it. The ES and SB3 learners
run through the same loop end to end in tests/test_sequence_runs.py and tests/test_es_run.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from esbench.measures.distribution import CATEGORICAL, ActionDist
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.stage_states import StageStates
from esbench.tracking.store import RunFileError, RunStore
from esbench.training.checkpoint import StateKind, resume_state, save_checkpoint
from esbench.training.learner import AfterStep, Learner, Seeds, StepStats
from esbench.training.loop import walk_stages
from esbench.training.ruler import Confirmation, Stage, StageEval, StagePlan
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress


class CountingLearner:
    """Trains in steps of 40 timesteps; scores ``score`` on every stage; logs every call."""

    def __init__(self, loop: SequenceLoop, score: float = 0.0) -> None:
        self.loop = loop
        self.score = score
        self.theta = np.zeros(3)
        self.calls: list[str] = []

    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        if seeds.regular:
            points = self.loop.p.points
            self.calls.append(f"point@{self.loop.p.timesteps}" if j == 0 else f"  +s{j} ({points})")
            return StageEval(f"s{j}", self.score, 0.0, 5)
        self.calls.append(f"confirm {seeds.first}+{seeds.episodes}")
        return StageEval(f"s{j}", self.score, 0.0, 5 * int(seeds.episodes or 0))

    def distribution(self, states: np.ndarray) -> ActionDist:
        return ActionDist(CATEGORICAL, np.tile(self.theta[:2], (len(states), 1)))

    def record_states(self) -> StageStates:
        states = np.zeros((2, 3))
        return StageStates(self.loop.stage.name, states, self.distribution(states), 3)

    def params(self) -> np.ndarray:
        return self.theta

    def train(self, after_step: AfterStep) -> None:
        if not after_step(StepStats(row=False)):
            return
        while True:
            self.theta = self.theta + 1.0
            if not after_step(StepStats(40, 40, 1, generation=int(self.theta[0]))):
                return

    def begin_stage(self, stage: Stage) -> None:
        self.calls.append(f"begin {stage.name}")

    def checkpoint(self) -> None:
        self.calls.append("checkpoint")


def _loop(n_stages: int, target: float | None = None) -> SequenceLoop:
    plan = StagePlan("seq", tuple(Stage(k, f"s{k}", {}, 100) for k in range(n_stages)))
    progress = SequenceProgress(next_eval_at=100)
    progress.snapshots = [np.zeros(3)]
    return SequenceLoop(plan, progress, interval=100, target=target, confirm=Confirmation(10, 0))


def test_the_walk_takes_the_points_boundaries_and_checkpoints_in_order() -> None:
    loop = _loop(2)
    learner = CountingLearner(loop)
    _: Learner = learner  # the protocol, checked by mypy too
    walk_stages(loop, learner, lambda: learner.calls.append(f"end@{loop.p.boundaries[-1]}"))
    assert [c for c in learner.calls if not c.startswith("  +")] == [
        "point@0",
        "point@120",  # stage 0's budget (100) is spent by the third step: its last point
        "end@120",
        "begin s1",
        "checkpoint",  # at the start of stage 1: a run killed in stage 1 resumes there
        "point@200",  # the schedule runs on over the sequence (every 100 timesteps)
        "point@240",  # stage 1 trains its whole budget from where it really started
        "end@240",
        "checkpoint",
    ]
    p = loop.p
    assert p.finished and p.boundaries == [120, 240] and p.points == 4
    assert [s.tolist() for s in p.snapshots] == [[0, 0, 0], [3, 3, 3], [6, 6, 6]]
    assert [s.stage for s in p.stage_states] == ["s0"]  # recorded where a later stage follows


def test_a_target_reached_at_timestep_0_ends_the_run_without_training() -> None:
    loop = _loop(1, target=1.0)
    learner = CountingLearner(loop, score=5.0)
    walk_stages(loop, learner, lambda: learner.calls.append(f"end@{loop.p.boundaries[-1]}"))
    assert learner.calls == ["point@0", "confirm 0+10", "end@0", "checkpoint"]
    assert loop.p.stopped_at_return and loop.p.finished


def test_a_finished_run_is_not_walked_again() -> None:
    loop = _loop(1)
    loop.p.finished = True
    learner = CountingLearner(loop)
    walk_stages(loop, learner)
    assert learner.calls == []


# --- the checkpoint envelope and the resume checks ------------------------------------------------


@dataclass
class ToyState:
    values: np.ndarray
    step: int


def _digest(state: ToyState) -> str:
    return hashlib.sha256(state.values.tobytes() + str(state.step).encode()).hexdigest()


def _check(state: ToyState) -> None:
    if state.step < 0:
        raise ValueError("a negative step")


TOY = StateKind(name="a toy", state_type=ToyState, types=(ToyState,), digest=_digest, check=_check)


def _store_with_rows(tmp_path: Path, n: int) -> tuple[RunStore, MetricsLogger]:
    store = RunStore(tmp_path, "exp", "run")
    store.dir.mkdir(parents=True)
    logger = MetricsLogger(store, [])
    for i in range(n):
        logger.record_many({"generation": i, "timesteps": 10 * i})
        logger.dump()
    return store, logger


def test_a_saved_state_resumes_with_the_rows_it_counted(tmp_path: Path) -> None:
    store, _ = _store_with_rows(tmp_path, 5)
    save_checkpoint(store, TOY, ToyState(np.arange(3.0), 7), n_rows=3)
    fresh = MetricsLogger(store, [])
    state = resume_state(store, fresh, TOY)
    assert isinstance(state, ToyState) and state.step == 7 and state.values.tolist() == [0.0, 1.0, 2.0]
    assert [r["generation"] for r in fresh.rows] == [0, 1, 2]  # metrics.csv cut back to the checkpoint


def test_no_checkpoint_is_a_fresh_start(tmp_path: Path) -> None:
    store, logger = _store_with_rows(tmp_path, 2)
    assert resume_state(store, logger, TOY) is None
    assert len(logger.rows) == 2


@pytest.mark.parametrize(
    ("state", "digest", "reason"),
    [
        (ToyState(np.arange(3.0), 1), "0" * 64, "its state does not match its digest"),
        (ToyState(np.arange(3.0), -1), None, "its state: a negative step"),
    ],
    ids=["bad-digest", "learner-check"],
)
def test_a_damaged_checkpoint_is_refused_in_one_line(
    tmp_path: Path, state: ToyState, digest: str | None, reason: str
) -> None:
    from esbench.training.checkpoint import Checkpoint

    store, logger = _store_with_rows(tmp_path, 2)
    store.save_checkpoint(Checkpoint(state, digest or _digest(state), 1), TOY.file_types)
    with pytest.raises(RunFileError, match="unreadable") as err:
        resume_state(store, logger, TOY)
    assert f"({reason})" in str(err.value)
    assert len(logger.rows) == 2  # nothing cut back before the checks pass


def test_another_learners_checkpoint_is_refused(tmp_path: Path) -> None:
    store, logger = _store_with_rows(tmp_path, 1)
    other = StateKind(
        name="a byte", state_type=bytes, types=(), digest=lambda b: hashlib.sha256(b).hexdigest()
    )
    save_checkpoint(store, other, b"snapshot", n_rows=1)
    with pytest.raises(RunFileError, match=r"\(not a toy checkpoint\)"):
        resume_state(store, logger, TOY)


# --- a learner of its own, named by its registry entry ----------------------------------------------


def toy_trainer(cfg: object, store: object, logger: object, run_key: str) -> dict[str, object]:
    """A training function a registry entry can name (never called here)."""
    return {}


def test_a_registry_entry_names_its_own_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from esbench.config import registry
    from esbench.runner import trainer_for

    toy = replace(registry.get_algorithm("openai_es"), key="toy", trainer=f"{__name__}:toy_trainer")
    monkeypatch.setitem(registry._REGISTRY, "toy", toy)
    assert trainer_for("toy") is toy_trainer
    assert trainer_for("openai_es").__module__ == "esbench.training.es"  # no trainer: its family's
