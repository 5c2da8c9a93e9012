"""Put a written report side by side in W&B: its tables and figures, in a ``report`` job.

Only in online mode (an explicit ``mode`` argument, else ``cfg.tracker.mode``, else the
``WANDB_MODE`` environment variable); in any other mode nothing is imported and nothing touches
the network. A W&B failure is reported as a warning and never fails the report.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def wandb_mode(cfg: Mapping[str, Any] | None = None, mode: str | None = None) -> str:
    """The effective W&B mode: ``mode``, else ``cfg["tracker"]["mode"]``, else $WANDB_MODE, else offline."""
    if mode:
        return str(mode)
    tracker = (cfg or {}).get("tracker") if cfg is not None else None
    if isinstance(tracker, Mapping) and tracker.get("mode"):
        return str(tracker["mode"])
    return os.environ.get("WANDB_MODE", "offline")


def log_report_to_wandb(
    report_dir: str | Path, cfg: Mapping[str, Any] | None = None, mode: str | None = None
) -> bool:
    """Log ``report_dir``'s tables (``tables/*.csv`` as wandb.Table) and figures (``figures/*.png``
    as wandb.Image) to a new run of job_type ``report``, when the mode is online; a
    ``wandb_summary.json`` there (flat name -> number) becomes the run's summary.

    Args:
        report_dir: A directory written by :func:`esbench.analysis.report.build_report`.
        cfg: Optional config; ``tracker.project``/``tracker.entity``/``tracker.mode`` are read,
            and the whole mapping is stored as the run's config.
        mode: W&B mode override (``online`` logs; anything else does nothing).

    Returns:
        True if the report was logged, False if skipped or W&B failed.
    """
    if wandb_mode(cfg, mode) != "online":
        return False
    report_dir = Path(report_dir)
    tracker = dict((cfg or {}).get("tracker") or {})
    try:
        import pandas as pd
        import wandb

        run = wandb.init(
            project=tracker.get("project", "esbench"),
            entity=tracker.get("entity"),
            job_type="report",
            name=f"report-{report_dir.name}",
            config={k: v for k, v in (cfg or {}).items() if k != "tracker"},
            mode="online",
            reinit=True,
        )
        try:
            payload: dict[str, Any] = {}
            for csv in sorted((report_dir / "tables").glob("*.csv")):
                payload[f"tables/{csv.stem}"] = wandb.Table(dataframe=pd.read_csv(csv))
            for png in sorted((report_dir / "figures").glob("*.png")):
                payload[f"figures/{png.stem}"] = wandb.Image(str(png))
            run.log(payload)
            summary = report_dir / "wandb_summary.json"  # flat numbers a report section chose (retention)
            if summary.is_file():
                run.summary.update(json.loads(summary.read_text()))
        finally:
            run.finish()
    except Exception as err:  # never let tracking fail the report
        warnings.warn(f"W&B logging of the report failed: {err}", RuntimeWarning, stacklevel=2)
        return False
    return True
