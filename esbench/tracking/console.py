"""Console progress for people: one line per step with timesteps, best return and steps/s."""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO


class ConsoleProgress:
    """A progress bar over the timestep budget (redrawn in place on a terminal, lines otherwise)."""

    def __init__(
        self, total_timesteps: int, label: str, stream: TextIO | None = None, width: int = 24
    ) -> None:
        self.total = max(int(total_timesteps), 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.best = -math.inf
        self.tty = self.stream.isatty()

    def write(self, row: dict[str, Any]) -> None:
        """Show the state after one step (a sequence's rows evaluating a stage other than the one
        trained add nothing: one line per step, with the trained stage's evaluation)."""
        train, evaluated = row.get("train_task"), row.get("eval_task")
        if train and evaluated and train != evaluated:
            return
        ts = int(row.get("timesteps") or 0)
        for key in ("train_return_max", "eval_return_mean"):
            v = row.get(key)
            if isinstance(v, (int, float)) and math.isfinite(v):
                self.best = max(self.best, float(v))
        frac = min(ts / self.total, 1.0)
        bar = "#" * int(frac * self.width) + "-" * (self.width - int(frac * self.width))
        ev = row.get("eval_return_mean")
        ev_s = f" eval {ev:9.1f}" if isinstance(ev, float) and math.isfinite(ev) else ""
        sps = row.get("steps_per_s") or 0.0
        line = (
            f"{self.label} [{bar}] {ts:>10,}/{self.total:,} steps | best {self.best:9.1f}{ev_s}"
            f" | {sps:8,.0f} steps/s"
        )
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the in-place line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
