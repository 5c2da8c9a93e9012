"""Console progress for people: one line per step with timesteps, returns, speed, elapsed time and ETA."""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TextIO


def _clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ConsoleProgress:
    """A progress bar over the timestep budget (redrawn in place on a terminal, lines otherwise).

    ``best`` is the best *evaluation* return so far (the deterministic policy on the fixed
    evaluation seeds, the number reports use); ``train max`` is this step's best training-episode
    return (for ES, the best perturbed member's), labelled as such. ``steps/s`` and the ETA use the
    timesteps this process took over the last ``window_s`` seconds, so they follow the rate as it
    changes (episodes growing longer, a sweep's other job finishing and leaving its workers to this
    one) instead of averaging over the whole run; before a second step they show the row's own
    ``steps_per_s`` and ``ETA ?``. A resumed run's bar is shown the rows before its checkpoint
    (:meth:`resumed`): its best evaluation is the whole run's; its speed counts from the resume.
    """

    def __init__(
        self,
        total_timesteps: int,
        label: str,
        stream: TextIO | None = None,
        width: int = 24,
        clock: Callable[[], float] = time.monotonic,
        window_s: float = 300.0,
    ) -> None:
        self.total = max(int(total_timesteps), 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.best = -math.inf
        self.tty = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self.window_s = window_s
        self.recent: deque[tuple[float, int]] = deque()  # (clock, timesteps), the window's points

    def resumed(self, rows: list[dict[str, Any]]) -> None:
        """Take in the rows a resumed run logged before its checkpoint (their best evaluation),
        without drawing them."""
        for row in rows:
            ev = self._evaluation(row)
            if ev is not None:
                self.best = max(self.best, ev)

    @staticmethod
    def _trains_what_it_evaluates(row: dict[str, Any]) -> bool:
        train, evaluated = row.get("train_task"), row.get("eval_task")
        return not (train and evaluated and train != evaluated)

    def _evaluation(self, row: dict[str, Any]) -> float | None:
        """The row's evaluation return of the stage trained, if it has one."""
        ev = row.get("eval_return_mean")
        if not isinstance(ev, (int, float)) or not math.isfinite(ev):
            return None
        if not self._trains_what_it_evaluates(row):
            return None
        return float(ev)

    def write(self, row: dict[str, Any]) -> None:
        """Show the state after one step (a sequence's rows evaluating a stage other than the one
        trained add nothing: one line per step, with the trained stage's evaluation)."""
        if not self._trains_what_it_evaluates(row):
            return
        ts = int(row.get("timesteps") or 0)
        rate = self._rate(ts)
        ev = self._evaluation(row)
        if ev is not None:
            self.best = max(self.best, ev)
        frac = min(ts / self.total, 1.0)
        bar = "#" * int(frac * self.width) + "-" * (self.width - int(frac * self.width))
        best_s = f"best eval {self.best:9.1f}" if math.isfinite(self.best) else f"best eval {'-':>9}"
        ev_s = f" (now {ev:9.1f})" if ev is not None else ""
        tr = row.get("train_return_max")
        tr_s = f" | train max {tr:9.1f}" if isinstance(tr, (int, float)) and math.isfinite(tr) else ""
        sps = rate if rate is not None else (row.get("steps_per_s") or 0.0)
        line = (
            f"{self.label} [{bar}] {ts:>10,}/{self.total:,} steps | {best_s}{ev_s}{tr_s}"
            f" | {sps:8,.0f} steps/s | {self._time(ts, rate)}"
        )
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def _rate(self, ts: int) -> float | None:
        """Timesteps per second over the last ``window_s`` seconds (the oldest point kept is the
        last one at least that old, so the window always spans it); None before two points or
        while no timestep was taken in the window."""
        now = self.clock()
        self.recent.append((now, ts))
        while len(self.recent) > 2 and now - self.recent[1][0] >= self.window_s:
            self.recent.popleft()
        then, ts_then = self.recent[0]
        if len(self.recent) < 2 or ts <= ts_then or now <= then:
            return None
        return (ts - ts_then) / (now - then)

    def _time(self, ts: int, rate: float | None) -> str:
        """``elapsed 1m05s, ETA 3m10s`` (``ETA ?`` before a rate was measured here)."""
        elapsed = self.clock() - self.started
        if ts >= self.total:
            eta = "done"
        elif rate:
            eta = _clock((self.total - ts) / rate)
        else:
            eta = "?"
        return f"elapsed {_clock(elapsed)}, ETA {eta}"

    def close(self) -> None:
        """End the in-place line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
