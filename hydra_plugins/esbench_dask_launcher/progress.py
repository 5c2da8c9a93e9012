"""Sweep progress for people: jobs done / running / queued / failed and an ETA."""

import math
import time
from dataclasses import dataclass, field


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``; ``?`` when unknown."""
    if not math.isfinite(seconds):
        return "?"
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


@dataclass
class SweepProgress:
    """Counts of a sweep's jobs and an ETA from the durations of the jobs that did real work.

    Attributes:
        total: Jobs in the sweep.
        clock: Time source (seconds); injectable for tests.
        weights: Relative expected cost of each job index (e.g. estimated core-seconds); the ETA
            prices the jobs left at the measured seconds per unit of weight, so a sweep that
            finishes its cheap ES jobs first does not promise to end in minutes. Jobs without a
            weight count as 1 (every job alike when none is given).
    """

    total: int
    clock: object = time.monotonic
    weights: dict[int, float] = field(default_factory=dict)
    started_at: dict[int, float] = field(default_factory=dict)
    finished: dict[int, str] = field(default_factory=dict)
    durations: list[float] = field(default_factory=list)
    done_weight: float = 0.0
    spans: list[tuple[float, float]] = field(default_factory=list)

    def _now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    def start(self, idx: int) -> bool:
        """Record that job ``idx`` started; returns whether that is news."""
        if idx in self.started_at or idx in self.finished:
            return False
        self.started_at[idx] = self._now()
        return True

    def finish(self, idx: int, status: str, seconds: float, started: float | None = None) -> None:
        """Record job ``idx``'s end: status ``complete``, ``skipped`` or ``failed``.

        ``started`` is the job's start as epoch seconds on its worker; with ``seconds`` it gives the
        job's span for ``peak_concurrency`` (the driver's polling would miss short overlaps).
        """
        self.started_at.pop(idx, None)
        if started is not None:
            self.spans.append((float(started), float(started) + float(seconds)))
        self.finished[idx] = status
        if status == "complete":
            self.durations.append(float(seconds))
            self.done_weight += self._weight(idx)

    def _weight(self, idx: int) -> float:
        return float(self.weights.get(idx, 1.0))

    @property
    def running(self) -> int:
        return len(self.started_at)

    @property
    def failed(self) -> int:
        return sum(s == "failed" for s in self.finished.values())

    @property
    def skipped(self) -> int:
        return sum(s == "skipped" for s in self.finished.values())

    @property
    def queued(self) -> int:
        return self.total - len(self.finished) - self.running

    def peak_concurrency(self) -> int:
        """Most jobs that ran at the same moment, from the finished jobs' spans (0 without any)."""
        edges = sorted([(start, 1) for start, _ in self.spans] + [(end, -1) for _, end in self.spans])
        peak = level = 0
        for _, step in edges:  # at equal times an end (-1) sorts before a start: touching is not overlap
            level += step
            peak = max(peak, level)
        return peak

    def eta(self) -> float:
        """Seconds until the sweep ends: queued and running jobs priced at the measured seconds
        per unit of weight (the mean duration when jobs are unweighted).

        Jobs run ``max(running, 1)`` at a time; a running job is credited with the time it has
        already run. ``inf`` until one job has done real work (skipped jobs do not count).
        Queued jobs without a weight count as 1 each.
        """
        if len(self.finished) == self.total:
            return 0.0
        if not self.durations or self.done_weight <= 0:
            return math.inf
        per_weight = sum(self.durations) / self.done_weight
        now = self._now()
        left_running = sum(
            max(per_weight * self._weight(i) - (now - t), 0.0) for i, t in self.started_at.items()
        )
        seen = self.started_at.keys() | self.finished.keys()
        queued_weighted = [w for i, w in self.weights.items() if i not in seen]
        queued_weight = sum(queued_weighted) + max(self.queued - len(queued_weighted), 0)
        width = max(self.running, 1)
        return (left_running + queued_weight * per_weight) / width

    def _notes(self) -> str:
        """`` (2 skipped, 1 failed)``, or nothing when every job did real work and succeeded."""
        extra = [f"{n} {word}" for n, word in ((self.skipped, "skipped"), (self.failed, "failed")) if n]
        return f" ({', '.join(extra)})" if extra else ""

    def line(self) -> str:
        """One console line: ``sweep: 3/8 done (1 failed), 2 running, 3 queued, ETA 4m10s``."""
        notes = self._notes()
        return (
            f"esbench: sweep: {len(self.finished)}/{self.total} done{notes}, {self.running} running, "
            f"{self.queued} queued, ETA {format_duration(self.eta())}"
        )

    def summary(self) -> str:
        """The sweep's last line: the counts and how many jobs ran at once at most."""
        notes = self._notes()
        return (
            f"esbench: sweep finished: {len(self.finished)}/{self.total} done{notes}, "
            f"up to {self.peak_concurrency()} job(s) ran at once"
        )
