"""Weights & Biases writer: the real ``wandb`` client, offline unless configured online.

Offline mode writes the run under ``<run_dir>/wandb/`` for a later ``wandb sync``; nothing touches
the network. Runs carry group (experiment/recipe), job type (algorithm) and tags (env, scale,
frame-skip) so the W&B workspace lays them side by side. Tracking never kills a run: any W&B
failure logs one warning and disables the writer; the local results store is written either way.

Two things the defaults of ``wandb.init`` get wrong for a benchmark:

* Online with no route to the server, ``wandb.init`` waits ``Settings.init_timeout`` (90 s)
  before it gives up, and ``run.finish`` waits for its uploads for ever. A run waits
  ``tracker.init_timeout_s`` for the first, ``tracker.finish_timeout_s`` for the second, and
  ``tracker.http_timeout_s`` for any one request (:func:`timeout_settings`).
* The Dask launcher runs several sweep jobs at once in one worker process. ``wandb.init`` by
  default keeps one run per process (``reinit="finish_previous"`` finishes the other job's run,
  whose next ``log`` then fails). Each writer creates its own run (``reinit="create_new"``) and
  logs through that run object only, never through the process-global ``wandb.log``.

A finished run logs its results store files as the artifact ``run-<run_id>`` of type
``run-results`` (:mod:`esbench.tracking.wandb_artifacts`), before ``run.finish``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from esbench.tracking.wandb_artifacts import build_run_artifact

log = logging.getLogger(__name__)

#: Retries of a failed W&B request (wandb's default: effectively unbounded, for days).
HTTP_RETRIES = 3


def timeout_settings(init_timeout_s: float, finish_timeout_s: float, http_timeout_s: float) -> dict[str, Any]:
    """The ``wandb.Settings`` fields that bound every W&B network call: ``wandb.init``
    (``init_timeout``), the uploads ``run.finish`` waits for (``finish_timeout``; what is left
    stays on disk for ``wandb sync``), and each request with its retries (GraphQL, file stream,
    file transfer)."""
    http = float(http_timeout_s)
    return {
        "init_timeout": float(init_timeout_s),
        "finish_timeout": float(finish_timeout_s),
        "x_graphql_timeout_seconds": http,
        "x_graphql_retry_max": HTTP_RETRIES,
        "x_file_stream_timeout_seconds": http,
        "x_file_stream_retry_max": HTTP_RETRIES,
        "x_file_transfer_timeout_seconds": http,
        "x_file_transfer_retry_max": HTTP_RETRIES,
    }


def stage_metrics(row: dict[str, Any]) -> dict[str, float]:
    """What W&B logs of a metrics row: its numbers, and the evaluation under the namespace of the
    stage evaluated, ``eval/<eval_task>/return_mean`` and ``.../return_std`` (issue #14: per-stage
    metric namespaces). A row evaluating another stage than the one trained (a task sequence's
    evaluation point) logs only that and ``timesteps``, so the run's own columns keep one value per
    step; NaN and non-numeric values are left out."""
    data = {k: v for k, v in row.items() if isinstance(v, (int, float)) and not math.isnan(float(v))}
    train, evaluated = str(row.get("train_task") or ""), str(row.get("eval_task") or "")
    if not evaluated:
        return data
    stage = {
        f"eval/{evaluated}/return_{stat}": data[f"eval_return_{stat}"]
        for stat in ("mean", "std")
        if f"eval_return_{stat}" in data
    }
    if train and evaluated != train:
        return {**({"timesteps": data["timesteps"]} if "timesteps" in data else {}), **stage}
    return {**data, **stage}


class WandbWriter:
    """Logs metric rows and the summary to one W&B run of its own."""

    def __init__(
        self,
        *,
        mode: str,
        project: str,
        entity: str | None,
        run_dir: Path,
        run_id: str,
        group: str,
        job_type: str,
        tags: list[str],
        config: dict[str, Any],
        init_timeout_s: float = 15.0,
        finish_timeout_s: float = 120.0,
        http_timeout_s: float = 30.0,
        artifacts: bool = True,
    ) -> None:
        """Start the W&B run; on failure (including no answer within ``init_timeout_s`` seconds,
        online) warn once and carry on without W&B. With ``artifacts``, :meth:`finish` of a
        finished run logs ``run_dir``'s results as artifact ``run-<run_id>``."""
        self.run: Any = None
        self.run_dir, self.run_id, self.artifacts = run_dir, run_id, artifacts
        if mode == "disabled":
            return
        started = time.monotonic()
        try:
            os.environ.setdefault("WANDB_SILENT", "true")
            import wandb

            run_dir.mkdir(parents=True, exist_ok=True)
            self.run = wandb.init(
                mode=mode,  # type: ignore[arg-type]
                project=project,
                entity=entity,
                dir=str(run_dir),
                name=run_id,
                id=hashlib.sha1(f"{group}/{run_id}".encode()).hexdigest()[:16],
                resume="allow",
                group=group,
                job_type=job_type,
                tags=[t for t in tags if t][:64],
                config=config,
                settings=wandb.Settings(
                    console="off",
                    x_disable_stats=True,
                    silent=True,
                    **timeout_settings(init_timeout_s, finish_timeout_s, http_timeout_s),
                ),
                reinit="create_new",  # concurrent jobs in one process each keep their own run
            )
            self.run.define_metric("timesteps")
            self.run.define_metric("*", step_metric="timesteps")
        except Exception as e:  # a tracking failure never kills a run
            waited = time.monotonic() - started
            hint = ""
            if mode == "online" and waited >= init_timeout_s:
                hint = (
                    f" (no answer from W&B within tracker.init_timeout_s={init_timeout_s:g} s;"
                    " tracker=wandb_offline logs locally for a later `wandb sync`)"
                )
            self._fail(e, hint)

    def _fail(self, e: BaseException, hint: str = "") -> None:
        """Warn once, on one line, and stop logging to W&B."""
        message = " ".join(str(e).split())  # W&B errors span lines; a warning is one line
        log.warning("W&B tracking disabled for this run: %s: %s%s", type(e).__name__, message, hint)
        self.run = None

    def write(self, row: dict[str, Any]) -> None:
        """Log one metrics row (non-numeric and NaN values left out)."""
        if self.run is None:
            return
        data = stage_metrics(row)
        try:
            self.run.log(data)
        except Exception as e:
            self._fail(e)

    def write_table(self, key: str, columns: list[str], data: list[list[Any]]) -> None:
        """Log a ``wandb.Table`` under ``key`` (for example sample generations), at the current step."""
        if self.run is None:
            return
        try:
            import wandb

            self.run.log({key: wandb.Table(columns=list[str | int](columns), data=data)})
        except Exception as e:
            self._fail(e)

    def finish(self, summary: dict[str, Any] | None = None, exit_code: int = 0) -> None:
        """Write the summary, log the results artifact of a finished run (``exit_code`` 0, with
        ``artifacts``), and close the run. A failing artifact is one warning; the run still closes."""
        if self.run is None:
            return
        try:
            if summary:
                for k, v in summary.items():
                    if isinstance(v, (int, float, str)):
                        self.run.summary[k] = v
            if exit_code == 0 and self.artifacts:
                try:  # queued, not awaited: run.finish uploads it within finish_timeout
                    self.run.log_artifact(build_run_artifact(self.run_dir, self.run_id))
                except Exception as e:
                    message = " ".join(str(e).split())
                    log.warning("W&B artifact of this run not logged: %s: %s", type(e).__name__, message)
            self.run.finish(exit_code=exit_code)
        except Exception as e:
            self._fail(e)
        self.run = None
