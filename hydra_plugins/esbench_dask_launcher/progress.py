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
    """

    total: int
    clock: object = time.monotonic
    started_at: dict[int, float] = field(default_factory=dict)
    finished: dict[int, str] = field(default_factory=dict)
    durations: list[float] = field(default_factory=list)

    def _now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    def start(self, idx: int) -> bool:
        """Record that job ``idx`` started; returns whether that is news."""
        if idx in self.started_at or idx in self.finished:
            return False
        self.started_at[idx] = self._now()
        return True

    def finish(self, idx: int, status: str, seconds: float) -> None:
        """Record job ``idx``'s end: status ``complete``, ``skipped`` or ``failed``."""
        self.started_at.pop(idx, None)
        self.finished[idx] = status
        if status == "complete":
            self.durations.append(float(seconds))

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

    def eta(self) -> float:
        """Seconds until the sweep ends: queued and running jobs at the mean measured duration.

        Jobs run ``max(running, 1)`` at a time; a running job is credited with the time it has
        already run. ``inf`` until one job has done real work (skipped jobs do not count).
        """
        if len(self.finished) == self.total:
            return 0.0
        if not self.durations:
            return math.inf
        mean = sum(self.durations) / len(self.durations)
        now = self._now()
        left_running = sum(max(mean - (now - t), 0.0) for t in self.started_at.values())
        width = max(self.running, 1)
        return (left_running + self.queued * mean) / width

    def line(self) -> str:
        """One console line: ``sweep: 3/8 done (1 failed), 2 running, 3 queued, ETA 4m10s``."""
        extra = [f"{n} {word}" for n, word in ((self.skipped, "skipped"), (self.failed, "failed")) if n]
        notes = f" ({', '.join(extra)})" if extra else ""
        return (
            f"esbench: sweep: {len(self.finished)}/{self.total} done{notes}, {self.running} running, "
            f"{self.queued} queued, ETA {format_duration(self.eta())}"
        )
