"""``esbench run --help``: every config group and its options, read from ``conf/`` and the registry.

Nothing here is written down twice: the groups are the folders of ``conf/``, an option is a YAML
file there (its first comment line is its description), and an algorithm's description is its
registry entry's. A group added later (say ``sequence/``) shows up with no change here.
"""

from __future__ import annotations

from pathlib import Path

from esbench.config.registry import algorithms

#: Settings for a pair (family or algorithm, env; env, budget) that Hydra applies by itself when both
#: are chosen (conf/config.yaml: ``optional family_env: ${family}_${env}``, ``optional algo_env:
#: ${algo}_${env}``, ``optional env_budget: ${env}_${budget}``).
PAIR_GROUPS: tuple[str, ...] = ("family_env", "algo_env", "env_budget")

#: Groups that are wiring, not choices a user makes (set by the algorithm's own file, or by the pair).
_INTERNAL_GROUPS = frozenset({"family", *PAIR_GROUPS})

USAGE = """\
usage: esbench run [-m] [--cfg job [--resolve]] [--info] KEY=VALUE ...

  Compose a run config from conf/ (Hydra syntax), check it, and run it: one run in-process, or with
  -m a sweep over comma-separated values (seed=0,1,2), every job checked before the first starts.

  -m, --multirun      run a sweep (Hydra multirun); add hydra/launcher=dask to run its jobs on Dask
  --cfg job           print the composed, validated config and exit without running
  --resolve           with --cfg: resolve interpolations in the printed config
  --cfg hydra|all     Hydra's own config (launcher, sweeper, search path), or both
  --info [TOPIC]      Hydra's information (plugins, searchpath, defaults, config)
  -h, --help          this help

  Your own config folders join the search path with hydra.searchpath=[file://DIR] or
  ESBENCH_CONFIG_PATH=DIR[:DIR...]; with -m, hydra/sweeper=optuna searches hyperparameters.

  Choose a config group option with GROUP=OPTION (algo=ars), set any key with KEY=VALUE
  (algo.sigma=0.05, budget.timesteps=200000, env.id=Swimmer-v5), e.g.
    esbench run algo=ars env=hopper seed=0
    esbench run -m algo=openai_es,ars env=halfcheetah,swimmer seed=0,1,2
    esbench run --cfg job algo=pgpe env=atari env.game=Pong
"""


def _first_comment(path: Path) -> str:
    """The first comment line of a YAML file (its description), without the ``#``."""
    for line in path.read_text().splitlines():
        text = line.strip()
        if text.startswith("# @package"):
            continue
        if text.startswith("#"):
            return text.lstrip("#").strip()
        if text:
            break
    return ""


def group_options(conf_dir: Path) -> dict[str, dict[str, str]]:
    """``{group: {option: description}}`` for every user-facing group of ``conf_dir``."""
    out: dict[str, dict[str, str]] = {}
    specs = algorithms()
    for group in sorted(p for p in conf_dir.iterdir() if p.is_dir()):
        if group.name in _INTERNAL_GROUPS:
            continue
        options: dict[str, str] = {}
        for f in sorted(group.glob("*.yaml")):
            spec = specs.get(f.stem) if group.name == "algo" else None
            if spec is not None:
                options[f.stem] = f"[{spec.family}] {spec.description}"
            else:
                options[f.stem] = _first_comment(f)
        out[group.name] = options
    return out


def pair_settings(conf_dir: Path) -> dict[str, str]:
    """``{"<group>/<option>": description}`` of every file of the :data:`PAIR_GROUPS` of ``conf_dir``."""
    return {
        f"{group}/{f.stem}": _first_comment(f)
        for group in PAIR_GROUPS
        for f in sorted((conf_dir / group).glob("*.yaml"))
    }


def run_help(conf_dir: Path) -> str:
    """The text ``esbench run --help`` prints."""
    lines = [USAGE, "config groups (GROUP=OPTION):"]
    for group, options in group_options(conf_dir).items():
        lines.append(f"\n  {group}:")
        width = max((len(o) for o in options), default=0)
        for option, description in options.items():
            lines.append(f"    {option.ljust(width)}  {description}".rstrip())
    pairs = pair_settings(conf_dir)
    if pairs:
        lines.append(
            "\n  applied by themselves to a chosen pair (family or algo, env; env, budget); "
            "not chosen by hand:"
        )
        width = max(len(p) for p in pairs)
        for name, description in pairs.items():
            lines.append(f"    {name.ljust(width)}  {description}".rstrip())
    lines.append(
        "\n  Any key of the run schema (esbench/config/schema.py) or of the chosen algorithm's schema can"
        "\n  be set; a misspelled key or value fails before any work with the allowed ones listed."
    )
    return "\n".join(lines)
