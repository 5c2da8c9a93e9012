"""Recipes: one YAML file per paper table or figure under ``experiments/``, with three scales.

A recipe names the sweep that feeds one report, and the seeds and budgets of each scale
(DESIGN.md promise 5)::

    description: "Table 1: MuJoCo data efficiency, OpenAI-ES vs TRPO"
    report: table1                 # esbench.analysis.report target; also the experiment name
    launcher: dask                 # dask (default): jobs share the cluster; basic: one at a time
    overrides: {KEY: VALUE}        # optional, every scale
    claims: [experiments/claims/x.yaml]  # optional: the claims its runs decide (its plan)
    scales:
      smoke | mini | paper:        # all three required; decisive, decisive_hard optional
        seeds: [0, 1, 2]
        budget: {timesteps: N | frames: N, eval_interval: N | eval_interval_frames: N, eval_episodes: N}
        overrides: {KEY: VALUE}    # optional, this scale
        sweeps:                    # the jobs are the union of these cartesian products
          - {algo: [openai_es, trpo], env: [hopper, walker2d], KEY: VALUE-or-list}

A list value is a sweep axis, a scalar a fixed override. ``algo: "@es"`` (or ``"@rl"``, or a list
holding them) stands for every registered algorithm of that family that trains control tasks, so a
recipe covers a new ES variant the moment it is registered; ``"@lm"`` stands for the algorithms
that train language models (``env=lm``: OpenAI-ES, EGGROLL, GRPO). ``games: [Pong, ...]`` (or ``all``: the
51 games of the paper's Table 2, :data:`esbench.envs.atari.ATARI_GAMES`) is the ``env.game`` axis.
``budget.frames`` gives every job the same emulator frames: ``budget.timesteps = frames /
env.frame_skip``, and ``budget.eval_interval_frames`` (with ``frames`` only, in place of
``eval_interval``) evaluates every job after the same emulator frames: ``eval.interval_timesteps =
eval_interval_frames / env.frame_skip``. The experiment name is the recipe name, so runs land in
``results_dir/<recipe>/`` where ``esbench report <recipe>`` reads them.

Each scale becomes one or more Hydra multirun sweeps (:class:`Sweep`), exactly what
``esbench run -m`` would be given; :func:`estimate` prices them from measured step rates
(:data:`STEP_RATES`).
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from esbench.analysis.claims.plan import Plan, load_plan
from esbench.config.registry import FAMILIES, algorithms, family_of, get_algorithm
from esbench.config.validate import ConfigError
from esbench.envs.checks import LM_ALGORITHMS
from esbench.runner import load_components
from esbench.utils.resources import conf_dir, experiments_dir

EXPERIMENTS_DIR: Path = experiments_dir()  # experiments/, shipped in the package
SCALES: tuple[str, ...] = ("smoke", "mini", "paper")
#: Scales a recipe may add to the three: budgets that decide the paper's claims on one 2-core
#: machine (experiments/table1.yaml says how, and what each costs): ``decisive`` the simple tasks'
#: claim, in under an hour; ``decisive_hard`` the hard tasks' (Hopper, Walker2d), 6-14 hours.
OPTIONAL_SCALES: tuple[str, ...] = ("decisive", "decisive_hard")
ALL_SCALES: tuple[str, ...] = (*SCALES, *OPTIONAL_SCALES)
LAUNCHERS: tuple[str, ...] = ("dask", "basic")
_RECIPE_KEYS = {"description", "report", "launcher", "overrides", "scales", "claims"}
_SCALE_KEYS = {"seeds", "budget", "overrides", "sweeps", "paper_targets"}
_BUDGET_KEYS = {"timesteps", "frames", "eval_interval", "eval_interval_frames", "eval_episodes"}


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
    """A paper table or figure: its report, the sweeps of each scale, and its claims (the plan its
    runs are made to decide: the claims files it names, :mod:`esbench.analysis.claims.plan`; read
    and checked with the recipe)."""

    name: str
    description: str
    report: str
    launcher: str
    overrides: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    path: Path = field(compare=False)
    claims: Plan = field(default_factory=lambda: Plan(""), compare=False)

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
                entries,
                float(targets["es_budget_factor"]),
                str(targets.get("of", "es_timesteps")),
                bool(targets.get("rl_stops", False)),
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
                if "eval_interval" in budget:
                    fixed["eval.interval_timesteps"] = budget["eval_interval"]
                else:  # the same emulator frames between evaluations at every frame skip
                    fixed["eval.interval_timesteps"] = max(int(budget["eval_interval_frames"]) // int(fs), 1)
                fixed["eval.episodes"] = budget["eval_episodes"]
                merged = {**fixed, **self.overrides, **spec.get("overrides", {}), **axes}
                merged["seed"] = spec["seeds"]
                merged["experiment"] = self.name
                args = [f"{k}={_fmt(v)}" for k, v in merged.items()]
                sweeps.append(Sweep(tuple(merge_overrides(args, user_overrides or [])), self.launcher))
        return sweeps


def paper_target_entries(
    entries: list[dict[str, Any]], factor: float, of: str = "es_timesteps", rl_stops: bool = False
) -> list[dict[str, Any]]:
    """Split each sweep entry's ES algorithms into one entry per environment whose budget reaches
    the paper's numbers: ``factor`` x the paper's timesteps to its 100% target (``of``:
    ``es_timesteps``, what the paper's ES needed, or ``trpo_timesteps``, what its TRPO needed),
    stopping at that target (the paper's TRPO score at 100% of its progress;
    ``budget.stop_at_return``), both read from ``results/reference/salimans2017_mujoco_table3.csv``.
    RL algorithms keep the scale's budget; with ``rl_stops`` they stop at the same target, confirmed
    the same way (``paper_targets.rl_stops``: a TRPO of ours on the ES's ruler). Environments the
    paper did not run keep the scale's budget."""
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
        if rest and not rl_stops:
            out.append({**entry, "algo": rest})
        for env in env_list if rest and rl_stops else []:
            env_id = _env_id(str(env))
            stop = (
                {"budget.stop_at_return": float(full.loc[env_id, "trpo_score"])}
                if env_id in full.index
                else {}
            )
            out.append({**entry, "algo": rest, "env": env, **stop})
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
    data = _config_file(path)
    return str((data.get("env") or {}).get("id", option)) if data else option


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
        if ("eval_interval" in budget) == ("eval_interval_frames" in budget):
            raise _fail(path, f"{where}.budget: one of eval_interval / eval_interval_frames")
        if "eval_interval_frames" in budget and "frames" not in budget:
            raise _fail(
                path, f"{where}.budget.eval_interval_frames needs a frames budget; allowed: eval_interval"
            )
        for key in ("eval_interval", "eval_interval_frames", "eval_episodes", "timesteps", "frames"):
            if key in budget and not (isinstance(budget[key], int) and budget[key] >= 1):
                raise _fail(path, f"{where}.budget.{key} must be an integer >= 1")
            if key == "eval_episodes" and key not in budget:
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
        claims=load_plan(path.stem, data.get("claims"), path.parent),
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
    # The built-in rates: a machine without a calibration file (``esbench bench calibrate`` writes
    # one, esbench.utils.calibration) is priced with these. Every key has the meaning and unit of
    # the calibration's ``rates`` (esbench.bench.calibrate says how each is measured).
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
    # ES per worker with the 64x64 MLP in the loop: DESIGN.md, HalfCheetah 11.7k/s against 14k/s
    # raw (0.84 -> 0.8). Priced per step as the raw simulator's seconds plus the policy's
    # (``es_policy_s``: 1/(0.8 x 23.6k) - 1/23.6k); ``es_steps_per_s`` (calibration only)
    # replaces that for the environments it measured, and ``es_episode_steps`` (calibration only)
    # prices their evaluation episodes at the measured mean length instead of the limit.
    "es_fraction": 0.8,
    "es_policy_s": 1.06e-5,
    "es_steps_per_s": {},
    "es_episode_steps": {},
    # Two busy processes on two cores against twice one (two raw simulators at once: 0.85-0.9
    # here): jobs that share the machine run this much slower than alone.
    "parallel_efficiency": 0.85,
    # SB3 on MuJoCo, one thread, steps/s; the cost is dominated by the updates, so one rate for
    # every MuJoCo env. Built in: each baseline's rate is a fact of its registry entry
    # (``steps_per_s``), measured in the mini runs here (two jobs at once on 2 cores): TRPO, 18
    # table1 runs (mean 1.58k) and 6 curves runs (2.03k) -> 1.7k; PPO 6 curves runs, 1.50-1.52k;
    # A2C 6 curves runs, 1.13-1.26k; DQN assumed, not measured. ``rl_default``: one without an
    # entry. A calibration measures ``rl_steps_per_s`` per algorithm.
    "rl_steps_per_s": {},
    "rl_default": 800,
    # Atari: seconds per agent step = cnn + frame_skip * frame. Emulator ~2.5k agent steps/s at
    # frame-skip 4 (DESIGN.md: ALE v5 ~2k, brief: 2-3k) -> 1e-4 s/frame; ES CNN ~1.6k steps/s at
    # frame-skip 4 -> 2.25e-4 s CNN. RL CNN forward+backward on CPU: measured for A2C in the
    # table2 mini runs (5 games, 250k agent steps at frame-skip 4, two jobs at once on 2 cores:
    # 550-720 steps/s, mean ~640 -> 1.56e-3 s/step - 4e-4 s of frames); PPO and DQN assumed alike.
    "atari_frame_s": 1.0e-4,
    "atari_cnn_s": {"es": 2.25e-4, "rl": 1.15e-3},
    # Language models (env=lm), one job in one process with one torch thread, at the smoke model
    # (conf/env_budget/lm_smoke.yaml: width 64, 2 layers); other models scale by width^2 x layers.
    # completion_s: seconds per training completion; job_s: a job's fixed cost with ``points``
    # evaluation points (model, tasks, stages); eval_point_s: each further point. Measured by
    # ``esbench bench calibrate`` on the 2-core development machine (other jobs running).
    "lm": {
        "completion_s": {"eggroll": 8.0e-4, "openai_es": 5.1e-4, "grpo": 8.1e-3},
        "job_s": {"eggroll": 1.6, "openai_es": 2.0, "grpo": 3.3},
        "eval_point_s": 0.63,
        "points": 3,
        "first_use_s": {"es": 3.6, "grpo": 3.5},  # once per reproduce: imports of transformers, TRL
        # Seconds per pretraining step of the task-A model (once per budget preset: it is cached by
        # config hash), the default model at load ~10 on 2 cores: 1,500 steps took ~6 min.
        "pretrain_step_s": 0.24,
    },
    # Fixed costs, measured on a tiny real sweep (an ES and a TRPO job): per job on its worker,
    # per sweep (interpreter, Hydra, validation, the cluster's start and stop), per recipe (the
    # report, one interpreter start-up). table1 smoke here: ES job 2.5 s for a 2.0 s run, TRPO
    # 14.6 s for 11.3 s, ~5 s between sweeps.
    "job_overhead_s": {"es": 0.5, "rl": 3.3},
    "sweep_overhead_s": 5.0,
    "recipe_overhead_s": 8.0,
    # Composing and checking one job's config (``esbench reproduce`` checks every job before the
    # first starts, and each sweep checks its own again): assumed.
    "validate_s": 0.2,
}
#: Episode length limits of the environments whose limit is not Gymnasium's MuJoCo 1,000 steps
#: (an evaluation episode is priced at its limit).
EPISODE_STEPS: dict[str, int] = {"cartpole": 500}
#: The model the ``lm`` rates are measured at (width, layers): ``budget=smoke``'s.
LM_RATE_MODEL: tuple[int, int] = (64, 2)


@dataclass(frozen=True)
class Pricing:
    """The rates an estimate is priced from, and where they came from.

    Attributes:
        rates: :data:`STEP_RATES`, with a calibration's measured rates in place of the built-in ones.
        source: ``"priced by calibration of <date> (<path>)"`` or ``"priced by built-in rates; ..."``.
        calibrated: Whether a calibration file priced it.
    """

    rates: dict[str, Any]
    source: str
    calibrated: bool


_PRICING_CACHE: dict[tuple[str, float], Pricing] = {}


def pricing(path: Path | None = None) -> Pricing:
    """The rates of this machine: the calibration file's (``path``, default
    :func:`esbench.utils.calibration.calibration_path`) over the built-in :data:`STEP_RATES`.

    Raises:
        CalibrationError: The file exists but is not a calibration (the message says to rerun it).
    """
    from esbench.utils.calibration import calibration_path, load_calibration

    source = path or calibration_path()
    try:
        key = (str(source), source.stat().st_mtime)
    except OSError:
        key = (str(source), -1.0)
    if key in _PRICING_CACHE:
        return _PRICING_CACHE[key]
    data = load_calibration(source)
    if data is None:
        result = Pricing(
            STEP_RATES,
            "priced by built-in rates; run `esbench bench calibrate` to measure this machine",
            False,
        )
    else:
        result = Pricing(
            _merged(STEP_RATES, data["rates"]), f"priced by calibration of {data['date']} ({source})", True
        )
    _PRICING_CACHE[key] = result
    return result


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s values in place, mappings merged key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@dataclass
class Cost:
    """Estimated cost of a scale of a recipe.

    Attributes:
        jobs: Jobs of the scale.
        timesteps: Their training timesteps.
        core_s: Core-seconds of the jobs (each job's compute and start-up).
        wall_s: Wall-clock seconds on ``cores`` cores, sweeps one after another, with every fixed cost.
        cores: Cores priced for.
        source: Which rates priced it (:attr:`Pricing.source`).
    """

    jobs: int
    timesteps: int
    core_s: float
    wall_s: float  # on ``cores`` cores
    cores: int
    source: str = ""


def _job_cost(job: list[str], rates: dict[str, Any] | None = None) -> tuple[int, float, float]:
    """(training timesteps, core-seconds, cores it can use: 0 for all) of one job from its overrides."""
    r = rates if rates is not None else pricing().rates
    o = {_key(a): a.split("=", 1)[1] for a in job if "=" in a}
    algo, env = o.get("algo", "openai_es"), o.get("env", "halfcheetah")
    steps = int(o.get("budget.timesteps", 1_000_000))
    interval = int(o.get("eval.interval_timesteps", 50_000))
    episodes = int(o.get("eval.episodes", 5))
    stages = 1
    if o.get("sequence", "none") not in ("none", "null"):  # every stage evaluated at every point
        env_option, stage_steps = sequence_shape(o["sequence"])
        env = o.get("env", env_option)
        if o.get("sequence.stage_timesteps", "null") != "null":
            stage_steps = [int(o["sequence.stage_timesteps"])] * len(stage_steps)
        if env == "lm" and o.get("budget.stage_timesteps", "null") != "null":
            stage_steps = [int(o["budget.stage_timesteps"]) if s else 0 for s in stage_steps]
        only = o.get("sequence.only_stage", "null")
        steps = stage_steps[int(only)] if only != "null" else sum(stage_steps)
        stages = len(stage_steps)
        episodes *= stages
    load_components()
    family = family_of(algo)
    is_es = family == "es"
    overhead = r["job_overhead_s"]["es" if is_es else "rl"]
    workers = int(o["cluster.n_workers"]) if o.get("cluster.n_workers", "null") != "null" else 0
    if env == "lm":
        return steps, _lm_cost(algo, steps, interval, stages, o.get("budget", "smoke"), r), 1.0
    if env == "atari":
        fs = int(o.get("env.frame_skip", 4))
        cap = int(o.get("env.max_episode_steps", 27_000))
        if is_es:
            steps = whole_generations(steps, algo, o, min(cap, 10_000 // fs))
        frame = r["atari_frame_s"] * fs
        train_s = steps * (r["atari_cnn_s"]["es" if is_es else "rl"] + frame)
        # An evaluation episode at a typical 10,000 frames, or its cap when shorter: the frame cap
        # env.eval_max_episode_frames when set, else the training cap.
        eval_frames = o.get("env.eval_max_episode_frames", "null")
        eval_cap = int(eval_frames) // fs if eval_frames != "null" else cap
        eval_steps = (steps // interval + 1) * episodes * min(eval_cap, 10_000 // fs)
        eval_s = eval_steps * (r["atari_cnn_s"]["es"] + frame)
    else:
        es_rate = es_steps_per_s(env, r)
        if is_es:
            steps = whole_generations(steps, algo, o, eval_episode_steps(env, o, r))
        rl_rate = r["rl_steps_per_s"].get(algo) or (get_algorithm(algo).steps_per_s if family else None)
        train_s = steps / (es_rate if is_es else (rl_rate or r["rl_default"]))
        eval_s = (steps // interval + 1) * episodes * eval_episode_steps(env, o, r) / es_rate
    return steps, train_s + eval_s + overhead, float(workers if is_es else 1)


def _config_file(path: Path) -> dict[str, Any]:
    """A config file's YAML mapping (empty if absent), parsed once per file version: pricing a
    recipe reads the same few files for each of its thousands of jobs."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    return _parsed_yaml(str(path), stamp)


@functools.lru_cache(maxsize=256)
def _parsed_yaml(path: str, stamp: int) -> dict[str, Any]:
    """The mapping in ``path`` at modification time ``stamp`` (the cache key; do not mutate it)."""
    data = yaml.safe_load(Path(path).read_text())
    return data if isinstance(data, dict) else {}


def whole_generations(steps: int, algo: str, overrides: dict[str, str], episode_steps: float) -> int:
    """An ES budget rounded up to whole generations: ES stops after the generation that reaches
    its budget, so a small budget can run up to one generation (population x episode steps) more."""
    option = overrides.get("algo", algo)
    path = conf_dir() / "algo" / f"{option}.yaml"
    data = _config_file(path)
    population = int(overrides.get("algo.population_size", data.get("population_size", 40)))
    per_generation = max(int(population * episode_steps), 1)
    return math.ceil(steps / per_generation) * per_generation


def eval_episode_steps(env: str, overrides: dict[str, str], rates: dict[str, Any]) -> float:
    """Steps an evaluation episode is priced at: the environment's limit (``env.max_episode_steps``,
    else :data:`EPISODE_STEPS`, else 1,000), or, where a calibration measured ES on the environment,
    the mean episode length of that short run when shorter (episodes that end early, as a smoke
    run's do; a long run whose policy survives longer is underpriced by as much)."""
    cap = float(overrides.get("env.max_episode_steps", EPISODE_STEPS.get(env, 1000)))
    return min(cap, float(rates["es_episode_steps"].get(env, cap)))


def es_steps_per_s(env: str, rates: dict[str, Any]) -> float:
    """ES's steps/s per worker on ``env``: measured (``es_steps_per_s``), else the raw simulator's
    seconds per step plus the policy's (``es_policy_s``)."""
    if env in rates["es_steps_per_s"]:
        return float(rates["es_steps_per_s"][env])
    raw = float(rates["mujoco_raw"].get(env, 10_000))
    return 1.0 / (1.0 / raw + float(rates["es_policy_s"]))


def _lm_cost(
    algo: str, completions: int, interval: int, stages: int, scale: str, rates: dict[str, Any]
) -> float:
    """Seconds of one language-model job: its fixed cost, its completions, its further evaluation
    points, scaled from the measured model to this scale's (width^2 x layers)."""
    lm = rates["lm"]
    kind = algo if algo in lm["completion_s"] else ("grpo" if family_of(algo) == "rl" else "openai_es")
    points = completions // max(interval, 1) + stages + 1
    width, layers = lm_model_shape(scale)
    size = (width**2 * layers) / (LM_RATE_MODEL[0] ** 2 * LM_RATE_MODEL[1])
    seconds = (
        lm["job_s"][kind]
        + completions * lm["completion_s"][kind]
        + max(points - lm["points"], 0) * lm["eval_point_s"]
    )
    return seconds * max(size, 1.0)  # a smaller model is no cheaper: fixed costs dominate it


def lm_model_shape(scale: str) -> tuple[int, int]:
    """(width, layers) of the language model of ``budget=<scale>`` (conf/env_budget/lm_<scale>.yaml
    over conf/env/lm.yaml)."""
    base = (_config_file(conf_dir() / "env" / "lm.yaml").get("lm") or {}).get("model", {})
    path = conf_dir() / "env_budget" / f"lm_{scale}.yaml"
    over = (_config_file(path).get("lm", {}) or {}).get("model", {})
    model = {**base, **(over or {})}
    return int(model.get("hidden_size", 128)), int(model.get("num_layers", 4))


def _lm_preset(o: dict[str, str]) -> dict[str, Any]:
    """The ``lm`` block of the job's ``conf/env_budget/lm_<budget>.yaml`` (empty without one)."""
    path = conf_dir() / "env_budget" / f"lm_{o.get('budget', 'mini')}.yaml"
    data = _config_file(path)
    return dict(data.get("lm") or {})


def lm_pretrain_s(jobs: Sequence[Sequence[str]], rates: dict[str, Any] | None = None) -> float:
    """Seconds of pretraining the task-A models of ``env=lm`` jobs: once per budget preset (the
    prior is cached by config hash and shared by every learner and seed), priced from the default
    model's seconds per step (``lm.pretrain_step_s``) scaled to the preset's model."""
    budgets = set()
    for job in jobs:
        o = {_key(a): a.split("=", 1)[1] for a in job if "=" in a}
        seq = o.get("sequence", "none")
        env = o.get("env", sequence_shape(seq)[0] if seq not in ("none", "null") else "")
        if env == "lm":
            budgets.add(o.get("budget", "mini"))
    per_step = float((rates or STEP_RATES)["lm"]["pretrain_step_s"])  # at the default model
    width, layers = lm_model_shape("default")
    seconds = 0.0
    for b in budgets:
        steps = int((_lm_preset({"budget": b}).get("pretrain") or {}).get("steps", 1500))
        w, n = lm_model_shape(b)
        seconds += steps * per_step * (w**2 * n) / (width**2 * layers)  # a step's cost ~ width^2 x layers
    return seconds


def sequence_shape(name: str) -> tuple[str, list[int]]:
    """(env group option, timesteps of each stage) of ``conf/sequence/<name>.yaml``, for costs: the
    env is the sequence's ``override /env`` default (else its ``env.name``)."""
    path = conf_dir() / "sequence" / f"{name}.yaml"
    data = _config_file(path)
    data = data or {}
    env = str((data.get("env") or {}).get("name", "halfcheetah"))
    for item in data.get("defaults") or []:
        if isinstance(item, dict) and "override /env" in item:
            env = str(item["override /env"])
    stages = (data.get("sequence") or {}).get("stages") or [{}]
    return env, [int(s.get("timesteps", 1_000_000)) for s in stages]


def estimated_core_seconds(overrides: Sequence[str]) -> float:
    """Estimated core-seconds of one job from its override strings (``algo=``, ``env=``,
    ``budget.timesteps=``, ...): a relative weight for a sweep's ETA, priced by :func:`pricing`."""
    return _job_cost(list(overrides))[1]


def estimate(recipe: Recipe, scale: str, cores: int = 2, prices: Pricing | None = None) -> Cost:
    """Jobs, timesteps, core-seconds and wall-clock on ``cores`` cores of a recipe's scale.

    The wall-clock follows how ``esbench reproduce`` runs a recipe: its sweeps one after another,
    each paying ``sweep_overhead_s``; inside a sweep on the Dask launcher the jobs share the cores
    (an ES job spreads its rollouts over all workers, an RL or language-model job uses one), so a
    sweep lasts its core-seconds over the cores, slowed by ``parallel_efficiency`` when more than
    one core is busy, and at least its longest job; on the basic launcher its jobs run one at a
    time. Every job's config is checked twice before it runs (``validate_s`` each: once by
    ``esbench reproduce`` before the first job, once by its sweep). The recipe adds
    ``recipe_overhead_s`` once (start-up and the report).
    """
    p = prices or pricing()
    r = p.rates
    efficiency = float(r["parallel_efficiency"]) if cores > 1 else 1.0
    jobs = timesteps = 0
    core_s = 0.0
    wall = float(r["recipe_overhead_s"])
    first_use: set[str] = set()  # language-model learner kinds whose first job pays the imports
    every_job: list[list[str]] = []
    for sweep in recipe.plan(scale):
        every_job.extend(sweep.jobs())
        costs = [_job_cost(j, r) for j in sweep.jobs()]
        first_use.update(k for k in map(_lm_kind, sweep.jobs()) if k is not None)
        jobs += len(costs)
        timesteps += sum(s for s, _, _ in costs)
        core_s += sum(c for _, c, _ in costs)
        wall += float(r["sweep_overhead_s"]) + 2 * len(costs) * float(r["validate_s"])
        if recipe.launcher == "basic":  # one job at a time, each on its own n_workers
            wall += sum(c / max(min(w or cores, cores), 1) for _, c, w in costs)
            continue
        busy = min(cores, sum(min(w or cores, cores) for _, _, w in costs))  # cores the jobs can use
        eff = efficiency if busy > 1 else 1.0
        longest = max(c / max(min(w or cores, cores), 1) for _, c, w in costs)  # one job alone
        wall += max(sum(c for _, c, _ in costs) / (busy * eff), longest)
    wall += sum(float(r["lm"]["first_use_s"][k]) for k in first_use)
    pretrain = lm_pretrain_s(every_job, r)  # env=lm: the task-A model, once, before the first job
    return Cost(jobs, timesteps, core_s + pretrain, wall + pretrain, cores, p.source)


def _lm_kind(job: list[str]) -> str | None:
    """``es`` or ``grpo`` for a language-model job (``env=lm``, directly or by its sequence), else None."""
    o = {_key(a): a.split("=", 1)[1] for a in job if "=" in a}
    env = o.get("env")
    if env is None and o.get("sequence", "none") not in ("none", "null"):
        env = sequence_shape(o["sequence"])[0]
    if env != "lm":
        return None
    return "es" if family_of(o.get("algo", "openai_es")) == "es" else "grpo"


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
    p = pricing()
    lines.append(f"Estimates {p.source}: {rates_summary(p.rates)}.")
    lines.append(
        "Wall-clock: sweeps one after another, each sharing the cores among its jobs, with the start-up "
        "of each job and sweep and the report, and for env=lm the task-A pretraining once per "
        "budget preset (esbench.recipes.estimate)."
    )
    return "\n".join(lines)


def rates_summary(rates: dict[str, Any]) -> str:
    """The headline rates in one line: HalfCheetah raw and ES, each baseline, Atari, start-up."""
    load_components()
    rl = {a: rates["rl_steps_per_s"].get(a) or get_algorithm(a).steps_per_s for a in ("trpo", "ppo", "a2c")}
    atari_es = 1.0 / (rates["atari_cnn_s"]["es"] + 4 * rates["atari_frame_s"])
    overhead = rates["job_overhead_s"]
    return (
        f"HalfCheetah raw {_steps(int(rates['mujoco_raw']['halfcheetah']))} steps/s, ES "
        f"{_steps(int(es_steps_per_s('halfcheetah', rates)))} steps/s per worker; SB3 "
        + ", ".join(f"{a.upper()} {_steps(int(v or rates['rl_default']))}" for a, v in rl.items())
        + f" steps/s per thread; Atari ES {_steps(int(atari_es))} agent steps/s per core at frame-skip 4; "
        f"start-up {overhead['es']:.1f} s (ES) / {overhead['rl']:.1f} s (RL) per job, "
        f"{rates['sweep_overhead_s']:.0f} s per sweep, {rates['recipe_overhead_s']:.0f} s per recipe"
    )


def all_jobs(recipe: Recipe, scale: str) -> list[list[str]]:
    """Every job of a recipe's scale (for tests and dry runs)."""
    return list(itertools.chain.from_iterable(s.jobs() for s in recipe.plan(scale)))
