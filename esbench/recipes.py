"""Recipes: one YAML file per paper table or figure under ``experiments/``, with three scales.

A recipe names the sweep that feeds one report, and the seeds and budgets of each scale
(DESIGN.md promise 5)::

    description: "Table 1: MuJoCo data efficiency, OpenAI-ES vs TRPO"
    report: table1                 # esbench.analysis.report target; also the experiment name
    launcher: dask                 # dask (default): jobs share the cluster; basic: one at a time
    overrides: {KEY: VALUE}        # optional, every scale
    scales:
      smoke | mini | paper:        # all three required; decisive optional (OPTIONAL_SCALES)
        seeds: [0, 1, 2]
        budget: {timesteps: N | frames: N, eval_interval: N, eval_episodes: N}
        overrides: {KEY: VALUE}    # optional, this scale
        sweeps:                    # the jobs are the union of these cartesian products
          - {algo: [openai_es, trpo], env: [hopper, walker2d], KEY: VALUE-or-list}

A list value is a sweep axis, a scalar a fixed override. ``algo: "@es"`` (or ``"@rl"``, or a list
holding them) stands for every registered algorithm of that family that trains control tasks, so a
recipe covers a new ES variant the moment it is registered; ``"@lm"`` stands for the algorithms
that train language models (``env=lm``: OpenAI-ES, EGGROLL, GRPO). ``games: [Pong, ...]`` (or ``all``: the
51 games of the paper's Table 2, :data:`esbench.envs.atari.ATARI_GAMES`) is the ``env.game`` axis.
``budget.frames`` gives every job the same emulator frames: ``budget.timesteps = frames /
env.frame_skip``. The experiment name is the recipe name, so runs land in
``results_dir/<recipe>/`` where ``esbench report <recipe>`` reads them.

Each scale becomes one or more Hydra multirun sweeps (:class:`Sweep`), exactly what
``esbench run -m`` would be given; :func:`estimate` prices them from measured step rates
(:data:`STEP_RATES`).
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from esbench.config.registry import FAMILIES, algorithms, family_of, get_algorithm
from esbench.config.validate import ConfigError
from esbench.envs.checks import LM_ALGORITHMS
from esbench.runner import load_components
from esbench.utils.resources import conf_dir, experiments_dir

EXPERIMENTS_DIR: Path = experiments_dir()  # experiments/, shipped in the package
SCALES: tuple[str, ...] = ("smoke", "mini", "paper")
#: Scales a recipe may add to the three: ``decisive`` is the budget that decides the paper's
#: claims on one 2-core machine in about three hours (experiments/table1.yaml says how).
OPTIONAL_SCALES: tuple[str, ...] = ("decisive",)
ALL_SCALES: tuple[str, ...] = (*SCALES, *OPTIONAL_SCALES)
LAUNCHERS: tuple[str, ...] = ("dask", "basic")
_RECIPE_KEYS = {"description", "report", "launcher", "overrides", "scales"}
_SCALE_KEYS = {"seeds", "budget", "overrides", "sweeps", "paper_targets"}
_BUDGET_KEYS = {"timesteps", "frames", "eval_interval", "eval_episodes"}


class RecipeError(ConfigError):
    """A bad recipe name, scale or recipe file; the message is one line."""


@dataclass(frozen=True)
class Sweep:
    """One Hydra multirun: its overrides (sweep axes comma-joined) and the launcher to use.

    Attributes:
        overrides: Arguments of ``esbench run -m``.
        launcher: ``dask`` or ``basic`` (Hydra's in-process launcher).
    """

    overrides: tuple[str, ...]
    launcher: str

    def command(self) -> str:
        """The equivalent command line."""
        args = " ".join(_shell_quote(o) for o in (f"hydra/launcher={self.launcher}", *self.overrides))
        return f"esbench run -m {args}"

    def jobs(self) -> list[list[str]]:
        """Every job's overrides, in Hydra's order."""
        from esbench.sweep import expand_sweep

        return expand_sweep(list(self.overrides))


@dataclass(frozen=True)
class Recipe:
    """A paper table or figure: its report and the sweeps of each scale."""

    name: str
    description: str
    report: str
    launcher: str
    overrides: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    path: Path = field(compare=False)

    def plan(self, scale: str, user_overrides: list[str] | None = None) -> list[Sweep]:
        """The sweeps of ``scale``; ``user_overrides`` (``KEY=VALUE``) win over the recipe's."""
        if scale not in self.scales:
            if scale in ALL_SCALES:
                raise RecipeError(
                    f"recipe {self.name} has no scale={scale}; allowed: {', '.join(self.scales)}"
                )
            raise RecipeError(f"scale={scale!r} is unknown; allowed: {', '.join(SCALES)}")
        spec = self.scales[scale]
        budget = spec["budget"]
        sweeps = []
        entries = [dict(e) for e in spec["sweeps"]]
        if spec.get("paper_targets"):
            targets = spec["paper_targets"]
            entries = paper_target_entries(
                entries, float(targets["es_budget_factor"]), str(targets.get("of", "es_timesteps"))
            )
        for entry in entries:
            axes = dict(entry)
            axes["algo"] = expand_families(axes["algo"])
            games = axes.pop("games", None)
            if games is not None:
                axes["env.game"] = _game_keys(games)
            frame_skips: list[Any] = [None]
            if "frames" in budget:
                fs = axes.pop("env.frame_skip", 4)
                frame_skips = list(fs) if isinstance(fs, list) else [fs]
            for fs in frame_skips:
                fixed: dict[str, Any] = {"budget": scale}
                if fs is None:
                    fixed["budget.timesteps"] = budget["timesteps"]
                else:
                    fixed["env.frame_skip"] = fs
                    fixed["budget.timesteps"] = max(int(budget["frames"]) // int(fs), 1)
                fixed["eval.interval_timesteps"] = budget["eval_interval"]
                fixed["eval.episodes"] = budget["eval_episodes"]
                merged = {**fixed, **self.overrides, **spec.get("overrides", {}), **axes}
                merged["seed"] = spec["seeds"]
                merged["experiment"] = self.name
                args = [f"{k}={_fmt(v)}" for k, v in merged.items()]
                sweeps.append(Sweep(tuple(merge_overrides(args, user_overrides or [])), self.launcher))
        return sweeps


def paper_target_entries(
    entries: list[dict[str, Any]], factor: float, of: str = "es_timesteps"
) -> list[dict[str, Any]]:
    """Split each sweep entry's ES algorithms into one entry per environment whose budget reaches
    the paper's numbers: ``factor`` x the paper's timesteps to its 100% target (``of``:
    ``es_timesteps``, what the paper's ES needed, or ``trpo_timesteps``, what its TRPO needed),
    stopping at that target (the paper's TRPO score at 100% of its progress;
    ``budget.stop_at_return``), both read from ``results/reference/salimans2017_mujoco_table3.csv``.
    RL algorithms keep the scale's budget. Environments the paper did not run keep it too."""
    if of not in ("es_timesteps", "trpo_timesteps"):
        raise RecipeError(f"paper_targets.of={of!r}; allowed: es_timesteps, trpo_timesteps")
    load_components()  # which algorithms are ES is the registry's answer: fill it first
    from esbench.analysis.table1 import load_mujoco_reference

    ref = load_mujoco_reference()
    full = ref[ref["progress_fraction"] == 1.0].set_index("gymnasium_id")
    out: list[dict[str, Any]] = []
    for entry in entries:
        algos = expand_families(entry["algo"])
        algos = algos if isinstance(algos, list) else [algos]
        es = [a for a in algos if family_of(a) == "es"]
        rest = [a for a in algos if a not in es]
        envs = entry.get("env")
        env_list = envs if isinstance(envs, list) else [envs]
        if rest:
            out.append({**entry, "algo": rest})
        for env in env_list if es else []:
            env_id = _env_id(str(env))
            if env_id not in full.index:
                out.append({**entry, "algo": es, "env": env})
                continue
            row = full.loc[env_id]
            out.append(
                {
                    **entry,
                    "algo": es,
                    "env": env,
                    "budget.timesteps": math.ceil(factor * float(row[of])),
                    "budget.stop_at_return": float(row["trpo_score"]),
                }
            )
    return out


def _env_id(option: str) -> str:
    """The Gymnasium id of ``conf/env/<option>.yaml`` (the option itself when no such file)."""
    path = conf_dir() / "env" / f"{option}.yaml"
    if not path.exists():
        return option
    data = yaml.safe_load(path.read_text()) or {}
    return str((data.get("env") or {}).get("id", option))


def expand_families(algo: Any) -> Any:
    """``"@es"`` / ``"@rl"`` (alone or in a list) -> every registered key of that family that
    trains control tasks, sorted; ``"@lm"`` -> every algorithm ``env=lm`` takes (ES and GRPO)."""
    items = algo if isinstance(algo, list) else [algo]
    out: list[str] = []
    for item in items:
        text = str(item)
        if text == "@lm":
            out += [k for k in LM_ALGORITHMS if k not in out]
        elif text.startswith("@"):
            family = text[1:]
            if family not in FAMILIES:
                raise RecipeError(f"algo: {text!r} is unknown; allowed: @es, @rl, @lm or algorithm keys")
            load_components()
            keys = [k for k, s in sorted(algorithms(family).items()) if not s.language_models_only]
            out += [k for k in keys if k not in out]
        elif text not in out:
            out.append(text)
    return out if isinstance(algo, list) or len(out) > 1 else out[0]


def merge_overrides(base: list[str], extra: list[str]) -> list[str]:
    """``base`` then ``extra``; an ``extra`` override replaces a ``base`` one with the same key."""
    keys = {_key(o) for o in extra}
    return [o for o in base if _key(o) not in keys] + list(extra)


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _fmt(value: Any) -> str:
    """A Hydra override value; a list becomes a sweep (``a,b,c``)."""
    if isinstance(value, list):
        return ",".join(_fmt(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    text = str(value)
    if re.fullmatch(r"[\w.\-/:${}@]+", text):
        return text
    return '"' + text.replace('"', '\\"') + '"'


def _shell_quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w.\-/:=,@+]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def _game_keys(games: Any) -> list[str]:
    """Table 2 game names as override-safe keys (``Q*Bert`` -> ``QBert``); ``all``: all 51."""
    from esbench.envs.atari import ATARI_GAMES

    names = list(ATARI_GAMES) if games == "all" else list(games)
    return [re.sub(r"[^A-Za-z0-9]+", "", str(n)) for n in names]


def _fail(path: Path, msg: str) -> RecipeError:
    return RecipeError(f"{path.name}: {msg}")


def _check_recipe(path: Path, data: Any) -> Recipe:
    """Validate one recipe file's content; raises :class:`RecipeError` naming the file and key."""
    from esbench.analysis.report import TARGETS

    if not isinstance(data, dict):
        raise _fail(path, "a recipe is a mapping")
    unknown = set(data) - _RECIPE_KEYS
    if unknown:
        raise _fail(path, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_RECIPE_KEYS)}")
    for key in ("description", "report", "scales"):
        if key not in data:
            raise _fail(path, f"missing key {key!r}")
    if data["report"] not in TARGETS:
        raise _fail(path, f"report={data['report']!r}; allowed: {', '.join(TARGETS)}")
    launcher = data.get("launcher", "dask")
    if launcher not in LAUNCHERS:
        raise _fail(path, f"launcher={launcher!r}; allowed: {', '.join(LAUNCHERS)}")
    scales = data["scales"]
    if not isinstance(scales, dict) or not set(SCALES) <= set(scales) <= set(ALL_SCALES):
        raise _fail(path, f"scales must be {', '.join(SCALES)}, optionally with {', '.join(OPTIONAL_SCALES)}")
    for scale, spec in scales.items():
        where = f"scales.{scale}"
        if not isinstance(spec, dict) or set(spec) - _SCALE_KEYS:
            raise _fail(path, f"{where}: allowed keys {sorted(_SCALE_KEYS)}")
        seeds = spec.get("seeds")
        if not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
            raise _fail(path, f"{where}.seeds must be a non-empty list of integers >= 0")
        budget = spec.get("budget") or {}
        if set(budget) - _BUDGET_KEYS or ("timesteps" in budget) == ("frames" in budget):
            raise _fail(path, f"{where}.budget: one of timesteps / frames, plus eval_interval, eval_episodes")
        for key in ("eval_interval", "eval_episodes", "timesteps", "frames"):
            if key in budget and not (isinstance(budget[key], int) and budget[key] >= 1):
                raise _fail(path, f"{where}.budget.{key} must be an integer >= 1")
            if key in ("eval_interval", "eval_episodes") and key not in budget:
                raise _fail(path, f"{where}.budget.{key} is missing")
        sweeps = spec.get("sweeps")
        if not sweeps or not all(isinstance(s, dict) and "algo" in s for s in sweeps):
            raise _fail(path, f"{where}.sweeps must be a non-empty list of mappings, each with algo")
        for s in sweeps:
            if "games" in s and s.get("env") != "atari":
                raise _fail(path, f"{where}.sweeps: games needs env: atari")
    return Recipe(
        name=path.stem,
        description=str(data["description"]),
        report=str(data["report"]),
        launcher=launcher,
        overrides=dict(data.get("overrides") or {}),
        scales={k: dict(v) for k, v in scales.items()},
        path=path,
    )


def load_recipes(directory: Path = EXPERIMENTS_DIR) -> dict[str, Recipe]:
    """Every recipe under ``directory``, by name (the file stem), validated."""
    recipes = {}
    for path in sorted(directory.glob("*.yaml")):
        recipes[path.stem] = _check_recipe(path, yaml.safe_load(path.read_text()))
    return recipes


def get_recipe(name: str, directory: Path = EXPERIMENTS_DIR) -> Recipe:
    """The recipe ``name``; :class:`RecipeError` listing the valid names otherwise."""
    recipes = load_recipes(directory)
    if name not in recipes:
        hint = did_you_mean(name, [*recipes, "all"])
        raise RecipeError(f"unknown recipe {name!r}{hint}; allowed: {', '.join(recipes)}, all")
    return recipes[name]


# --- cost estimates -------------------------------------------------------------------------------

STEP_RATES: dict[str, Any] = {
    # MuJoCo -v5, raw env steps/s in one process with a constant action, measured on the 2-core
    # development machine (gymnasium 1.x, mujoco 3.x, 4,000 steps each, other jobs running).
    "mujoco_raw": {
        "halfcheetah": 23_600,
        "hopper": 10_400,
        "walker2d": 7_600,
        "swimmer": 19_900,
        "inverted_pendulum": 51_900,
        "inverted_double_pendulum": 18_600,
        "ant": 4_500,
        "humanoid": 2_000,  # DESIGN.md "Facts checked"
        "cartpole": 50_000,  # assumed, classic control
    },
    # ES throughput per core as a fraction of raw (64x64 MLP forward, task overheads); DESIGN.md:
    # HalfCheetah 11.7k/s with the MLP in the loop against 14k/s raw (0.84).
    "es_fraction": 0.8,
    # SB3 on MuJoCo, one thread, steps/s; the cost is dominated by the updates, so one rate for
    # every MuJoCo env. Each baseline's rate is a fact of its registry entry (``steps_per_s``), measured
    # in the mini runs here (two jobs at once on 2 cores): TRPO, 18 table1 runs (mean 1.58k) and 6
    # curves runs (2.03k) -> 1.7k; PPO 6 curves runs, 1.50-1.52k; A2C 6 curves runs, 1.13-1.26k;
    # DQN assumed, not measured. This is the rate of one without an entry.
    "rl_default": 800,
    # Atari: seconds per agent step = cnn + frame_skip * frame. Emulator ~2.5k agent steps/s at
    # frame-skip 4 (DESIGN.md: ALE v5 ~2k, brief: 2-3k) -> 1e-4 s/frame; ES CNN ~1.6k steps/s at
    # frame-skip 4 -> 2.25e-4 s CNN. RL CNN forward+backward on CPU: measured for A2C in the
    # table2 mini runs (5 games, 250k agent steps at frame-skip 4, two jobs at once on 2 cores:
    # 550-720 steps/s, mean ~640 -> 1.56e-3 s/step - 4e-4 s of frames); PPO and DQN assumed alike.
    "atari_frame_s": 1.0e-4,
    "atari_cnn_s": {"es": 2.25e-4, "rl": 1.15e-3},
    "job_overhead_s": 8.0,  # cluster/env/policy start-up, W&B offline init, report I/O per job
    # env=lm, the default model (1.06M parameters), one torch thread, measured on the shared 2-core
    # machine at load ~10 (2,048 completions per learner from an untrained model, so every
    # completion runs its full 12 tokens): training completions per second, seconds to evaluate one
    # task on 200 held-out prompts, and seconds per pretraining step (1,500 steps took ~6 min).
    "lm": {
        "completions_per_s": {"eggroll": 200.0, "openai_es": 146.0, "grpo": 34.0},
        "eval_task_s": 1.4,
        "pretrain_step_s": 0.24,
    },
}


@dataclass
class Cost:
    """Estimated cost of a scale of a recipe."""

    jobs: int
    timesteps: int
    core_s: float
    wall_s: float  # on ``cores`` cores
    cores: int


def _job_cost(job: list[str]) -> tuple[int, float, float]:
    """(training timesteps, core-seconds, parallelism) of one job from its overrides."""
    o = {_key(a): a.split("=", 1)[1] for a in job if "=" in a}
    algo, env = o.get("algo", "openai_es"), o.get("env", "halfcheetah")
    steps = int(o.get("budget.timesteps", 1_000_000))
    interval = int(o.get("eval.interval_timesteps", 50_000))
    episodes = int(o.get("eval.episodes", 5))
    if o.get("sequence", "none") not in ("none", "null"):  # every stage evaluated at every point
        env_option, stage_steps = sequence_shape(o["sequence"])
        env = o.get("env", env_option)
        if o.get("sequence.stage_timesteps", "null") != "null":
            stage_steps = [int(o["sequence.stage_timesteps"])] * len(stage_steps)
        only = o.get("sequence.only_stage", "null")
        steps = stage_steps[int(only)] if only != "null" else sum(stage_steps)
        episodes *= len(stage_steps)
    load_components()
    is_es = family_of(algo) == "es"
    if env == "lm":
        return _lm_job_cost(o, algo, steps, interval, episodes)
    if env == "atari":
        fs = int(o.get("env.frame_skip", 4))
        cap = int(o.get("env.max_episode_steps", 27_000))
        frame = STEP_RATES["atari_frame_s"] * fs
        train_s = steps * (STEP_RATES["atari_cnn_s"]["es" if is_es else "rl"] + frame)
        eval_steps = (steps // interval + 1) * episodes * min(cap, 10_000 // fs)
        eval_s = eval_steps * (STEP_RATES["atari_cnn_s"]["es"] + frame)
    else:
        raw = STEP_RATES["mujoco_raw"].get(env, 10_000)
        es_rate = raw * STEP_RATES["es_fraction"]
        rl_rate = get_algorithm(algo).steps_per_s if family_of(algo) is not None else None
        train_s = steps / (es_rate if is_es else (rl_rate or STEP_RATES["rl_default"]))
        eval_s = (steps // interval + 1) * episodes * 1000 / es_rate
    workers = int(o["cluster.n_workers"]) if o.get("cluster.n_workers", "null") != "null" else 0
    return steps, train_s + eval_s + STEP_RATES["job_overhead_s"], float(workers)


def _lm_preset(o: dict[str, str]) -> dict[str, Any]:
    """The ``lm`` block of the job's ``conf/env_budget/lm_<budget>.yaml`` (empty without one)."""
    path = conf_dir() / "env_budget" / f"lm_{o.get('budget', 'mini')}.yaml"
    data = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    return dict(data.get("lm") or {})


def _lm_job_cost(
    o: dict[str, str], algo: str, steps: int, interval: int, tasks: int
) -> tuple[int, float, float]:
    """An ``env=lm`` job: its completions at the learner's rate, and every evaluation point's
    ``tasks`` tasks plus the prior's measures on ``lm.decoding.eval_prompts`` prompts each."""
    rates = STEP_RATES["lm"]
    seq = o.get("sequence", "none")
    if seq not in ("none", "null") and "budget.stage_timesteps" in o:  # the lm_* sequences' stage budget
        per_stage = int(o["budget.stage_timesteps"])
        steps = sum(per_stage if n else 0 for n in sequence_shape(seq)[1])  # a budget-0 stage stays 0
    prompts = int(
        o.get("lm.decoding.eval_prompts", (_lm_preset(o).get("decoding") or {}).get("eval_prompts", 200))
    )
    train_s = steps / rates["completions_per_s"].get(algo, min(rates["completions_per_s"].values()))
    eval_s = (steps // interval + 2) * (tasks + 1) * rates["eval_task_s"] * prompts / 200
    return steps, train_s + eval_s + STEP_RATES["job_overhead_s"], 1.0  # one torch thread


def lm_pretrain_s(jobs: Sequence[Sequence[str]]) -> float:
    """Seconds of pretraining the task-A models of ``env=lm`` jobs: once per budget preset (the
    prior is cached by config hash and shared by every learner and seed)."""
    budgets = set()
    for job in jobs:
        o = {_key(a): a.split("=", 1)[1] for a in job if "=" in a}
        seq = o.get("sequence", "none")
        env = o.get("env", sequence_shape(seq)[0] if seq not in ("none", "null") else "")
        if env == "lm":
            budgets.add(o.get("budget", "mini"))
    steps = sum(int((_lm_preset({"budget": b}).get("pretrain") or {}).get("steps", 1500)) for b in budgets)
    return steps * float(STEP_RATES["lm"]["pretrain_step_s"])


def sequence_shape(name: str) -> tuple[str, list[int]]:
    """(env group option, timesteps of each stage) of ``conf/sequence/<name>.yaml``, for costs: the
    env is the sequence's ``override /env`` default (else its ``env.name``)."""
    path = conf_dir() / "sequence" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    data = data or {}
    env = str((data.get("env") or {}).get("name", "halfcheetah"))
    for item in data.get("defaults") or []:
        if isinstance(item, dict) and "override /env" in item:
            env = str(item["override /env"])
    stages = (data.get("sequence") or {}).get("stages") or [{}]
    return env, [int(s.get("timesteps", 1_000_000)) for s in stages]


def estimated_core_seconds(overrides: Sequence[str]) -> float:
    """Estimated core-seconds of one job from its override strings (``algo=``, ``env=``,
    ``budget.timesteps=``, ...): a relative weight for a sweep's ETA, priced by :data:`STEP_RATES`."""
    return _job_cost(list(overrides))[1]


def estimate(recipe: Recipe, scale: str, cores: int = 2) -> Cost:
    """Jobs, timesteps, core-seconds and wall-clock on ``cores`` cores of a recipe's scale."""
    jobs = [j for sweep in recipe.plan(scale) for j in sweep.jobs()]
    costs = [_job_cost(j) for j in jobs]
    pretrain = lm_pretrain_s(jobs)  # env=lm: the task-A model, once, before the first job
    core_s = sum(c for _, c, _ in costs) + pretrain
    if recipe.launcher == "basic":  # one job at a time, each on its own n_workers
        wall = pretrain + sum(c / max(min(w or cores, cores), 1) for _, c, w in costs)
    else:
        wall = core_s / cores
    return Cost(len(jobs), sum(s for s, _, _ in costs), core_s, wall, cores)


def did_you_mean(name: str, allowed: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``allowed``, or an empty string."""
    close = difflib.get_close_matches(name, list(allowed), n=2)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def human_seconds(seconds: float) -> str:
    """A duration for people: ``42 s``, ``17 min``, ``3.5 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _steps(n: int) -> str:
    for unit, div in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def list_recipes(cores: int = 2, big: int = 64) -> str:
    """The ``esbench reproduce --list`` text: each recipe, its report, and its cost per scale."""
    lines = []
    for name, recipe in load_recipes().items():
        lines.append(f"{name:<10} {recipe.description}  [report: {recipe.report}]")
        for scale in recipe.scales:
            c = estimate(recipe, scale, cores)
            big_wall = estimate(recipe, scale, big).wall_s if scale == "paper" else None
            extra = f", ~{human_seconds(big_wall)} on {big} cores" if big_wall is not None else ""
            lines.append(
                f"  {scale:<8} {c.jobs:>4} jobs {_steps(c.timesteps):>7} steps "
                f"{c.core_s / 3600:>9.2f} core-h  ~{human_seconds(c.wall_s)} on {cores} cores{extra}"
            )
    lines.append(
        "Estimates from measured step rates (esbench.recipes.STEP_RATES): MuJoCo raw rates measured "
        "here, ES at 0.8 of raw; SB3 TRPO 1.7k, PPO 1.5k, A2C 1.2k steps/s per thread; Atari ES "
        "~1.6k agent steps/s per core at frame-skip 4, A2C on Atari ~0.64k (measured); env=lm: training "
        "completions/s of each learner, evaluation and pretraining seconds, measured under load."
    )
    return "\n".join(lines)


def all_jobs(recipe: Recipe, scale: str) -> list[list[str]]:
    """Every job of a recipe's scale (for tests and dry runs)."""
    return list(itertools.chain.from_iterable(s.jobs() for s in recipe.plan(scale)))
