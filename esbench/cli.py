"""``esbench`` command line: thin entry points over the package.

    esbench run [-m] KEY=VALUE ...       one run, or a Hydra multirun sweep (-m); see run --help
    esbench reproduce RECIPE scale=...   a paper table/figure: sweep + report (see --list)
    esbench --version                    the installed version
    esbench --shell-completion install=bash   tab completion of `esbench run` (Hydra's)
    esbench report TARGET ...            tables and figures from the results store
    esbench bench [...]                  throughput and memory benchmark

Every config is composed and checked before any work starts; a bad one exits with status 2 and
one line naming the key, the value and what is allowed. ``esbench run`` of a single config runs
in-process; a multirun validates every job of the sweep first, then hands over to Hydra so that
launchers (``hydra/launcher=dask``) apply.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable

from esbench.config.errors import ConfigError

USAGE = __doc__ or ""


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``esbench <command> ...``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE.strip())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"esbench {version()}")
        return 0
    if argv[0] in ("-sc", "--shell-completion"):
        return shell_completion(argv)
    command, rest = argv[0], argv[1:]
    _setup_logging()
    from esbench.runner import load_components

    load_components()  # the algorithm registry, env checks and resolvers
    try:
        if command == "run":
            return run_command(rest)
        if command == "reproduce":
            from esbench.reproduce import main as reproduce_main

            return reproduce_main(rest)
        if command == "report":
            from esbench.analysis.cli import main as report_main

            return report_main(rest)
        if command == "bench":
            from esbench.bench.command import main as bench_main

            return bench_main(rest)
    except ConfigError as e:
        print(f"esbench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("esbench: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    print(f"esbench: unknown command {command!r}; allowed: run, reproduce, report, bench", file=sys.stderr)
    return 2


def run_command(args: list[str]) -> int:
    """``esbench run``: one run in-process, a validated sweep through Hydra with ``-m``, the
    config groups with ``--help``, or the composed config with ``--cfg job``."""
    from esbench.config.compose import CONF_DIR, compose_run_config
    from esbench.runtime.cluster import ClusterError
    from esbench.tracking.store import RunLockedError

    if any(a in ("-h", "--help") for a in args):
        from esbench.config.help import run_help

        print(run_help(CONF_DIR))
        return 0
    if _hydra_own_option(args):  # --cfg hydra|all, --info: Hydra prints, nothing runs
        from esbench.sweep import hydra_passthrough

        return hydra_passthrough(args)
    multirun = any(a in ("-m", "--multirun") for a in args)
    resolve = "--resolve" in args
    show_cfg, overrides = _take_cfg_option(a for a in args if a not in ("-m", "--multirun", "--resolve"))
    if any(a.startswith("-") for a in overrides):
        bad = next(a for a in overrides if a.startswith("-"))
        raise ConfigError(
            f"unknown option {bad!r}; allowed: -m/--multirun, --cfg job|hydra|all, --resolve, --info, "
            "--help and KEY=VALUE overrides"
        )
    if not multirun:
        _refuse_run_dir(overrides)
    if show_cfg:
        from omegaconf import OmegaConf

        print(OmegaConf.to_yaml(compose_run_config(overrides), resolve=resolve), end="")
        return 0
    if multirun:
        from esbench.sweep import run_sweep

        return run_sweep(overrides)
    from esbench.runner import run
    from esbench.runtime.cluster import sole_run_of_process

    cfg = compose_run_config(overrides)
    try:
        with sole_run_of_process():
            run(cfg)
    except (ClusterError, RunLockedError) as e:  # cannot start now: no cluster, or the run is busy
        print(f"esbench: error: {e}", file=sys.stderr)
        return 3
    return 0


def version() -> str:
    """The installed distribution's version (``importlib.metadata``); ``unknown`` when esbench runs
    from a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("esbench")
    except PackageNotFoundError:
        return "unknown (not installed)"


def shell_completion(argv: list[str]) -> int:
    """``esbench --shell-completion install=bash``: Hydra's tab completion of ``esbench run``.

    Hydra's bash script calls ``esbench -sc query=bash`` with the command line in ``COMP_LINE``;
    the ``run`` word is dropped from it so Hydra sees ``esbench KEY=VALUE ...``, as for any app.
    """
    line = os.environ.get("COMP_LINE")
    if line is not None:
        words = line.split(" ")
        if len(words) > 1 and words[1] == "run":
            os.environ["COMP_LINE"] = " ".join([words[0], *words[2:]])
    from esbench.sweep import hydra_passthrough

    return hydra_passthrough(argv, prog="esbench")


def _hydra_own_option(args: list[str]) -> bool:
    """Whether ``args`` ask for one of Hydra's own outputs: ``--info [TOPIC]``, ``--cfg hydra|all``."""
    if any(a in ("--info", "-i") or a.startswith("--info=") for a in args):
        return True
    for i, a in enumerate(args):
        what = a.split("=", 1)[1] if a.startswith("--cfg=") else None
        if a in ("--cfg", "-c") and i + 1 < len(args):
            what = args[i + 1]
        if what in ("hydra", "all"):
            return True
    return False


def _refuse_run_dir(overrides: list[str]) -> None:
    """A single run writes to ``results_dir``, never to Hydra's run directory: refuse setting it."""
    for o in overrides:
        key = o.lstrip("+~").split("=", 1)[0]
        if key.startswith("hydra.run.") or key in ("hydra.run", "hydra.job.chdir", "hydra.output_subdir"):
            raise ConfigError(
                f"{key}: not used by esbench run; a run writes to results_dir/<experiment>/<run_id>/ "
                "(set results_dir=DIR or experiment=NAME)"
            )


def _take_cfg_option(args: Iterable[str]) -> tuple[bool, list[str]]:
    """Split ``--cfg job`` (Hydra's spelling; ``--cfg=job`` too) from the other arguments."""
    rest, show, it = [], False, iter(args)
    for a in it:
        if a in ("--cfg", "-c"):
            what = next(it, None)
            if what != "job":
                raise ConfigError(f"--cfg {what}: not supported; allowed: --cfg job, hydra, all")
            show = True
        elif a.startswith("--cfg="):
            if a != "--cfg=job":
                raise ConfigError(f"{a}: not supported; allowed: --cfg job, hydra, all")
            show = True
        else:
            rest.append(a)
    return show, rest


def _setup_logging() -> None:
    """esbench's own messages at INFO on stderr; third-party libraries at WARNING."""
    level = os.environ.get("ESBENCH_LOGLEVEL", "INFO").upper()
    logging.basicConfig(level=logging.WARNING, format="esbench: %(levelname)s: %(message)s")
    logging.getLogger("esbench").setLevel(level)
    for noisy in ("distributed", "dask", "bokeh", "tornado", "fontTools", "matplotlib"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
