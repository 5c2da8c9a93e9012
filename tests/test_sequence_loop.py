"""The sequence loop both families share (esbench.training.sequence_loop), on a hand-made learner.

The learner below is not a stand-in for a real component: it is the smallest thing that satisfies
the ``Learner`` protocol with answers known in advance, so every number the loop writes can be
checked by hand. The real learners (ES on Dask, the SB3 callback) run through the loop in
tests/test_sequence_runs.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from esbench.measures.distribution import CATEGORICAL, ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.learner import Seeds
from esbench.training.ruler import Confirmation, Counters, Stage, StageEval, StagePlan
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress


class ScriptedLearner:
    """Returns stage j's score from ``scores[j]``, 7 steps per evaluation, and logits that are the
    parameters' first two entries on every state."""

    def __init__(self, params: np.ndarray, scores: list[float], confirm: float | None = None) -> None:
        self.theta = params
        self.scores = scores
        self.confirm = confirm  # a confirmation's score (None: stage 0's regular score)
        self.recorded = 0
        self.confirmed_on: list[tuple[int, int, int]] = []

    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        if seeds.regular:
            return StageEval(f"s{j}", self.scores[j], 0.5, 7)
        assert seeds.episodes is not None
        self.confirmed_on.append((j, seeds.first, seeds.episodes))
        score = self.scores[j] if self.confirm is None else self.confirm
        return StageEval(f"s{j}", score, 0.25, 3 * seeds.episodes)

    def distribution(self, states: np.ndarray) -> ActionDist:
        return ActionDist(CATEGORICAL, np.tile(self.theta[:2], (len(states), 1)))

    def record_states(self) -> StageStates:
        self.recorded += 1
        states = np.zeros((4, 3))
        return StageStates("s0", states, self.distribution(states), 11)

    def params(self) -> np.ndarray:
        return self.theta


def _plan(n: int = 2, budget: int = 100) -> StagePlan:
    return StagePlan("seq", tuple(Stage(k, f"s{k}", {}, budget) for k in range(n)))


def _loop(plan: StagePlan, target: float | None = None) -> tuple[SequenceLoop, SequenceProgress]:
    p = SequenceProgress(next_eval_at=50)
    p.snapshots = [np.array([1.0, 0.0, 2.0])]
    confirm = Confirmation(episodes=10, eval_episodes=0)  # the scripted learner has no seeds of its own
    return SequenceLoop(plan, p, interval=50, target=target, confirm=confirm), p


def test_a_point_evaluates_every_stage_and_updates_the_counters() -> None:
    loop, p = _loop(_plan())
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [3.0, -1.0])
    assert loop.needs_first_point
    first = loop.evaluation_point(learner)
    assert first.index == 0 and [e.stage for e in first.evals] == ["s0", "s1"]
    assert p.points == 1 and p.eval_timesteps == 14 and p.last_eval == (3.0, 0.5) and p.best_eval == 3.0
    assert p.last_eval_by_stage == {"s0": 3.0, "s1": -1.0} and p.next_eval_at == 50
    assert first.shared["drift_l2"] == 0.0 and first.per_stage == {}  # no ended stage yet
    p.timesteps = 120  # a step that overshot two scheduled points: the next is the one after it
    learner.theta, learner.scores = np.array([1.0, 3.0, 6.0]), [2.0, 0.0]
    second = loop.evaluation_point(learner)
    assert second.index == 1 and p.best_eval == 3.0 and p.last_eval == (2.0, 0.5) and p.next_eval_at == 150
    assert second.shared["drift_l2"] == pytest.approx(5.0)  # ||(0, 3, 4)||
    assert second.shared["drift_rel"] == pytest.approx(5.0 / math.sqrt(5.0))


def test_the_schedule_and_the_stage_budget() -> None:
    loop, p = _loop(_plan())
    p.timesteps = 49
    assert not loop.point_due(stage_done=False) and loop.point_due(stage_done=True)
    p.timesteps = 50
    assert loop.point_due(stage_done=False) and not loop.stage_done()
    p.timesteps = 100
    assert loop.stage_done()


def test_a_stage_end_records_its_states_once_and_only_with_a_later_stage() -> None:
    loop, p = _loop(_plan())
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [3.0, -1.0])
    end = loop.evaluation_point(learner, stage_end=True)
    assert learner.recorded == 1 and p.eval_timesteps == 11 + 14
    assert end.per_stage == {"s0": {"policy_kl": 0.0}}  # the stage-end policy against itself
    loop.evaluation_point(learner, stage_end=True)  # the same stage ending again records nothing
    assert learner.recorded == 1
    last, q = _loop(_plan(n=1))
    last.evaluation_point(learner, stage_end=True)
    assert learner.recorded == 1 and q.stage_states == []  # no later point would use them


def test_stage_boundaries_snapshot_and_advance_until_the_last_stage() -> None:
    loop, p = _loop(_plan(n=3))
    p.timesteps, p.wall_clock_s = 104, 9.0
    assert loop.end_stage(np.array([5.0, 5.0, 5.0])) is True
    assert (p.stage, p.stage_start, p.boundaries, p.boundary_wall_clock_s) == (1, 104, [104], [9.0])
    assert loop.stage.name == "s1" and not loop.stage_done()
    p.timesteps = 210
    assert loop.end_stage(np.array([6.0, 6.0, 6.0])) is True and p.stage == 2
    p.timesteps = 310
    assert loop.end_stage(np.array([7.0, 7.0, 7.0])) is False
    assert p.finished and not loop.running and p.boundaries == [104, 210, 310]
    assert [float(s[0]) for s in p.snapshots] == [1.0, 5.0, 6.0, 7.0]  # K + 1 rows: the final ones last


def test_reaching_the_target_ends_the_run_at_that_stage() -> None:
    loop, p = _loop(_plan(n=1), target=2.5)
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [2.0])
    loop.evaluation_point(learner)
    assert loop.running
    learner.scores = [2.5]
    loop.evaluation_point(learner)
    assert p.stopped_at_return and not loop.running
    assert learner.confirmed_on == [(0, 0, 10)]  # confirmed on 10 seeds past the (zero) regular ones
    assert p.eval_timesteps == 7 + 7 + 30  # the confirmation's steps count as evaluation
    assert loop.end_stage(learner.params()) is False and p.finished
    summary = loop.summary(Counters(2, p.timesteps, 0, 0, 1.0, 1.0, p.eval_timesteps, 1), learner.params())
    assert summary["stopped_at_return"] is True and summary["final_eval_return"] == 2.5
    assert summary["stage_boundaries"] == [0]


def test_a_point_the_confirmation_does_not_back_keeps_training() -> None:
    """A lucky evaluation above the target is confirmed on fresh seeds before the
    run stops; when the confirmation misses, the run goes on, the point records both numbers, and
    the next confirmation plays seeds no earlier evaluation played."""
    plan = _plan(n=1)
    p = SequenceProgress(next_eval_at=50)
    p.snapshots = [np.array([1.0, 0.0, 2.0])]
    loop = SequenceLoop(plan, p, interval=50, target=2.5, confirm=Confirmation(episodes=12, eval_episodes=5))
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [3.0], confirm=2.0)
    point = loop.evaluation_point(learner)
    assert loop.running and not p.stopped_at_return
    assert point.confirm is not None and point.confirm.mean == 2.0
    (row,) = loop.rows(Counters(0, 0, 0, 0, 0.0, 0.0, p.eval_timesteps, 1), point, {})
    assert (row["eval_return_mean"], row["confirm_return_mean"], row["confirmed"]) == (3.0, 2.0, 0.0)
    learner.scores = [2.0]  # below the target: no confirmation taken, nothing recorded
    point = loop.evaluation_point(learner)
    assert point.confirm is None
    (row,) = loop.rows(Counters(0, 0, 0, 0, 0.0, 0.0, p.eval_timesteps, 1), point, {})
    assert "confirmed" not in row
    learner.scores, learner.confirm = [2.6], 2.7
    point = loop.evaluation_point(learner)
    assert p.stopped_at_return and not loop.running
    (row,) = loop.rows(Counters(0, 0, 0, 0, 0.0, 0.0, p.eval_timesteps, 1), point, {})
    assert (row["confirm_return_mean"], row["confirmed"]) == (2.7, 1.0)
    # seeds eval.seed + 5.. + 16, then + 17.. + 28: past the 5 regular seeds and each other
    assert learner.confirmed_on == [(0, 5, 12), (0, 17, 12)] and p.confirmations == 2


def test_confirmation_seeds_are_fresh_and_a_pure_function_of_the_count() -> None:
    c = Confirmation(episodes=10, eval_episodes=3)
    spans = [set(range(c.first(k), c.first(k) + c.episodes)) for k in range(4)]
    assert min(spans[0]) == 3  # past the regular seeds 0, 1, 2
    assert all(a.isdisjoint(b) for i, a in enumerate(spans) for b in spans[i + 1 :])
    assert [c.first(k) for k in range(3)] == [Confirmation(10, 3).first(k) for k in range(3)]


def test_a_target_without_its_confirmation_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its Confirmation"):
        SequenceLoop(_plan(n=1), SequenceProgress(), interval=50, target=1.0)


def test_a_learner_that_cannot_confirm_cannot_stop_at_a_target() -> None:
    class NoConfirm(ScriptedLearner):
        def evaluate(self, j: int, seeds: Seeds) -> StageEval:
            if not seeds.regular:
                raise NotImplementedError
            return super().evaluate(j, seeds)

    loop, _ = _loop(_plan(n=1), target=1.0)
    with pytest.raises(TypeError, match="cannot confirm a target"):
        loop.evaluation_point(NoConfirm(np.zeros(3), [2.0]))


def test_rows_of_a_point_and_of_a_step() -> None:
    loop, _ = _loop(_plan())
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [3.0, -1.0])
    counters = Counters(0, 0, 0, 0, 0.0, 0.0, 14, 1)
    point = loop.evaluation_point(learner)
    rows = loop.rows(counters, point, {"train_return_mean": 1.5, "param_norm": 2.0})
    assert [(r["train_task"], r["eval_task"], r["eval_return_mean"]) for r in rows] == [
        ("s0", "s0", 3.0),
        ("s0", "s1", -1.0),
    ]
    assert "train_return_mean" in rows[0] and "train_return_mean" not in rows[1]
    (step,) = loop.rows(counters, None, {"train_return_mean": 1.5})
    assert math.isnan(step["eval_return_mean"]) and step["eval_task"] == "s0"
