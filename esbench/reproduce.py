"""``esbench reproduce``: one command per paper table or figure — the sweep, then the report.

    esbench reproduce --list                               recipes and estimated cost per scale
    esbench reproduce RECIPE|all scale=smoke|mini|paper|decisive|decisive_hard
                      [results_dir=PATH] [out_dir=PATH] [allow_partial=true] [--dry-run] [KEY=VALUE ...]

Everything is checked first (recipe, scale, every job's config, the scheduler of
``cluster=address``); then each of the recipe's sweeps runs on the Dask launcher (jobs already
complete are skipped, so the same command resumes; each run it launches records the recipe's plan,
the hash of its claims files: :func:`record_plan`), then ``esbench.analysis.report.build_report``
writes ``out_dir/<report>/REPORT.md`` (``reports/`` by default, git-ignored; ``out_dir=paper`` updates
the committed reports). Other ``KEY=VALUE`` overrides (``cluster=address
cluster.address=tcp://HOST:8786``) apply to every job.

Exit codes: 0 done; 1 a job failed or the report could not be built (the report is still written
from the complete runs, marked partial); 2 bad usage, recipe, scale or config; 3 the cluster cannot
be reached.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from esbench.config.validate import ConfigError
from esbench.recipes import (
    ALL_SCALES,
    Recipe,
    RecipeError,
    Sweep,
    did_you_mean,
    estimate,
    get_recipe,
    human_seconds,
    list_recipes,
    load_recipes,
    pricing,
)
from esbench.utils.calibration import CalibrationError

if TYPE_CHECKING:
    from esbench.tracking.store import RunStore

USAGE = (__doc__ or "").strip()
#: Where reports go unless ``out_dir=`` says otherwise: a git-ignored directory, so a reproduction
#: never overwrites the committed reports in ``paper/`` (``out_dir=paper`` writes those).
DEFAULT_OUT_DIR = "reports"
_OWN_KEYS = ("scale", "out_dir", "allow_partial")


def _parse(argv: list[str]) -> tuple[list[str], dict[str, str], list[str], set[str]]:
    """(recipe names, own options, job overrides, flags). Raises RecipeError on bad usage."""
    names: list[str] = []
    opts: dict[str, str] = {}
    overrides: list[str] = []
    flags: set[str] = set()
    for arg in argv:
        if arg in ("--list", "--dry-run", "--allow-partial"):
            flags.add(arg)
        elif arg.startswith("-"):
            raise RecipeError(f"unknown option {arg!r}; allowed: --list, --dry-run, --allow-partial")
        elif "=" in arg and arg.split("=", 1)[0] in _OWN_KEYS:
            key, value = arg.split("=", 1)
            opts[key] = value
        elif "=" in arg:
            overrides.append(arg)
        else:
            names.append(arg)
    return names, opts, overrides, flags


def _scale(opts: dict[str, str], recipes: list[Recipe]) -> str:
    """The ``scale=`` asked for; RecipeError naming the allowed ones (and the closest) otherwise."""
    allowed = ", ".join(ALL_SCALES)
    if "scale" not in opts:
        example = f"esbench reproduce {recipes[0].name if len(recipes) == 1 else 'all'} scale=smoke"
        raise RecipeError(f"give a scale (e.g. {example}); allowed: {allowed}")
    scale = opts["scale"]
    if scale not in ALL_SCALES:
        raise RecipeError(f"scale={scale!r} is unknown{did_you_mean(scale, ALL_SCALES)}; allowed: {allowed}")
    return scale


def _cost_line(recipes: list[Recipe], scale: str) -> str:
    """What the reproduction will cost, printed before its first job, and which rates priced it
    (this machine's calibration, or the built-in rates)."""
    cores = os.cpu_count() or 1
    prices = pricing()
    costs = [estimate(r, scale, cores, prices) for r in recipes if scale in r.scales]
    jobs, wall = sum(c.jobs for c in costs), sum(c.wall_s for c in costs)
    return (
        f"esbench: reproduce {', '.join(r.name for r in recipes)} at scale {scale}: {jobs} job(s), "
        f"estimated ~{human_seconds(wall)} on {cores} core(s), {prices.source}"
    )


def _recipes(names: list[str]) -> list[Recipe]:
    if len(names) != 1:
        valid = ", ".join([*load_recipes(), "all"])
        raise RecipeError(f"give one recipe (or all); allowed: {valid}")
    if names[0] == "all":
        return list(load_recipes().values())
    return [get_recipe(names[0])]


def _value(overrides: list[str], key: str, default: str) -> str:
    for o in reversed(overrides):
        if o.split("=", 1)[0].lstrip("+~") == key:
            return o.split("=", 1)[1]
    return default


def _check_cluster(overrides: list[str]) -> None:
    """Fail fast (ClusterError) when ``cluster=address`` has no scheduler answering."""
    from esbench.config.compose import compose_run_config
    from esbench.runtime.cluster import dask_client

    cfg = compose_run_config([o for o in overrides if o.startswith("cluster")])
    if cfg.cluster.kind == "address":
        with dask_client(cfg.cluster, quiet=True):
            pass


def _run(sweep: Sweep) -> int:
    """Run one sweep through Hydra and its launcher; returns the sweep's exit status."""
    from esbench.sweep import run_sweep

    print(f"esbench: {sweep.command()}", flush=True)
    try:
        return run_sweep([f"hydra/launcher={sweep.launcher}", *sweep.overrides])
    except SystemExit as e:  # Hydra reports its own errors (e.g. the cluster) and exits
        return int(e.code) if isinstance(e.code, int) else 1


def record_plan(recipe: Recipe, stores: list[RunStore], made_before: set[Path]) -> tuple[int, int]:
    """Record the recipe's plan in each run it launched now; returns (runs that record this plan,
    runs that record none or another).

    The record says which plan a run was MADE under, so it is written only by the reproduction that
    launched the run: a run found complete when the reproduction started (``made_before``) keeps
    what it has, and one with no record stays without (it predates records, or was made by
    ``esbench run``: which claims it was made to decide is not known). A run that already records a
    plan keeps it (:meth:`~esbench.tracking.store.RunStore.record_plan`); its report then says the
    plan changed after it. Re-running it (``resume=false``) clears its files, this record with them.
    """
    current, record = recipe.claims.hash, recipe.claims.record()
    under, other = 0, 0
    for store in stores:
        if not store.is_complete:
            continue
        kept = store.plan_record() if store.dir in made_before else store.record_plan(record)
        if kept is not None and kept.get("hash") == current:
            under += 1
        else:
            other += 1
    return under, other


def reproduce(
    recipe: Recipe,
    scale: str,
    overrides: list[str],
    out_dir: str,
    allow_partial: bool,
    stores: list[RunStore] | None = None,
) -> int:
    """Run one recipe's sweeps at ``scale`` (recording its plan in the runs they make,
    :func:`record_plan`; ``stores``: their run directories), then its report; returns the exit status."""
    from esbench.analysis.report import build_report
    from esbench.analysis.stats import IncompleteResultsError

    sweeps = recipe.plan(scale, overrides)
    stores = stores or []
    made_before = {s.dir for s in stores if s.is_complete}
    failed = 0
    for sweep in sweeps:
        failed += _run(sweep) != 0
    _, other = record_plan(recipe, stores, made_before)
    if other:
        print(
            f"esbench: {recipe.name}: {other} run(s) were not made under the current plan "
            f"(claims plan {recipe.claims.hash[:12]}): its report decides nothing until they are re-run",
            flush=True,
        )
    results_dir = _value(overrides, "results_dir", "results/runs")
    try:
        path = build_report(
            recipe.report,
            results_dir=results_dir,
            out_dir=out_dir,
            allow_partial=allow_partial or failed > 0,
            recipe_scale=scale,
        )
    except (IncompleteResultsError, FileNotFoundError) as e:
        print(f"esbench: {recipe.name}: report not written: {e}", file=sys.stderr)
        return 1
    print(f"esbench: {recipe.name} ({scale}): report written: {path}", flush=True)
    if failed:
        print(
            f"esbench: {recipe.name}: {failed} sweep(s) had failed jobs (report marked partial)",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: list[str]) -> int:
    """``esbench reproduce ...``; returns the exit status."""
    from esbench.runtime.cluster import ClusterError

    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    try:
        names, opts, overrides, flags = _parse(argv)
        if "--list" in flags:
            print(list_recipes())
            return 0
        recipes = _recipes(names)
        scale = _scale(opts, recipes)
        allow_partial = "--allow-partial" in flags or opts.get("allow_partial", "false").lower() == "true"
        plans = [(r, r.plan(scale, overrides)) for r in recipes]
        out_dir = opts.get("out_dir", DEFAULT_OUT_DIR)
        if "--dry-run" in flags:
            print(f"# {_cost_line(recipes, scale).removeprefix('esbench: ')}")
            for recipe, sweeps in plans:
                print(f"# {recipe.name} ({scale}) -> esbench report {recipe.report} out_dir={out_dir}")
                print("\n".join(s.command() for s in sweeps))
            return 0
        from esbench.sweep import sweep_run_stores

        stores: dict[str, list[RunStore]] = {}
        for recipe, sweeps in plans:
            for s in sweeps:
                stores.setdefault(recipe.name, []).extend(sweep_run_stores(list(s.overrides)) or [])
        print(_cost_line(recipes, scale), flush=True)
        _check_cluster(overrides)
    except (ConfigError, CalibrationError) as e:
        print(f"esbench reproduce: error: {e}", file=sys.stderr)
        return 2
    except ClusterError as e:
        print(f"esbench reproduce: error: {e}", file=sys.stderr)
        return 3
    from esbench.runtime.cluster import reusing_local_clusters

    status = 0
    with reusing_local_clusters():  # the sweeps one after another: start the workers once
        for recipe, _ in plans:
            status = max(
                status, reproduce(recipe, scale, overrides, out_dir, allow_partial, stores.get(recipe.name))
            )
    return status
