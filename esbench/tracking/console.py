"""Console progress for people: one line per step with timesteps, returns, speed, elapsed time and ETA."""

from __future__ import annotations

import math
import sys
import time
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
    return (for ES, the best perturbed member's), labelled as such. The ETA extrapolates this
    process's timesteps per second to the rest of the budget (a resumed run counts from where it
    resumed).
    """

    def __init__(
        self,
        total_timesteps: int,
        label: str,
        stream: TextIO | None = None,
        width: int = 24,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = max(int(total_timesteps), 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.best = -math.inf
        self.tty = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self.first_ts: int | None = None

    def write(self, row: dict[str, Any]) -> None:
        """Show the state after one step (a sequence's rows evaluating a stage other than the one
        trained add nothing: one line per step, with the trained stage's evaluation)."""
        train, evaluated = row.get("train_task"), row.get("eval_task")
        if train and evaluated and train != evaluated:
            return
        ts = int(row.get("timesteps") or 0)
        if self.first_ts is None:
            self.first_ts = ts
        ev = row.get("eval_return_mean")
        has_eval = isinstance(ev, (int, float)) and math.isfinite(ev)
        if has_eval:
            self.best = max(self.best, float(ev))  # type: ignore[arg-type]
        frac = min(ts / self.total, 1.0)
        bar = "#" * int(frac * self.width) + "-" * (self.width - int(frac * self.width))
        best_s = f"best eval {self.best:9.1f}" if math.isfinite(self.best) else f"best eval {'-':>9}"
        ev_s = f" (now {ev:9.1f})" if has_eval else ""
        tr = row.get("train_return_max")
        tr_s = f" | train max {tr:9.1f}" if isinstance(tr, (int, float)) and math.isfinite(tr) else ""
        sps = row.get("steps_per_s") or 0.0
        line = (
            f"{self.label} [{bar}] {ts:>10,}/{self.total:,} steps | {best_s}{ev_s}{tr_s}"
            f" | {sps:8,.0f} steps/s | {self._time(ts)}"
        )
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def _time(self, ts: int) -> str:
        """``elapsed 1m05s, ETA 3m10s`` (``ETA ?`` before any timestep was taken here)."""
        elapsed = self.clock() - self.started
        done = ts - (self.first_ts or 0)
        if ts >= self.total:
            eta = "done"
        elif done > 0 and elapsed > 0:
            eta = _clock((self.total - ts) * elapsed / done)
        else:
            eta = "?"
        return f"elapsed {_clock(elapsed)}, ETA {eta}"

    def close(self) -> None:
        """End the in-place line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
