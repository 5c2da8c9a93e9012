"""Every figure every report draws, at its committed size, from synthetic stores shaped like the
real ones (six MuJoCo tasks with long names, seeds ending at different wall-clock times, stopped
runs, many algorithms, worker counts, frame-skips, task sequences): no two texts overlap and every
legend lies outside every panel's data area (:func:`esbench.analysis.figure_check.layout_problems`).

Each report's figures are captured as they are saved (the real ``savefig`` still writes them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from esbench.analysis import figures
from esbench.analysis.figure_check import layout_problems
from esbench.analysis.report import build_report
from tests.synthetic_store import write_run

MUJOCO = (
    "HalfCheetah-v5",
    "Hopper-v5",
    "InvertedDoublePendulum-v5",
    "InvertedPendulum-v5",
    "Swimmer-v5",
    "Walker2d-v5",
)
ATARI = (
    "ALE/Breakout-v5",
    "ALE/MontezumaRevenge-v5",
    "ALE/Pong-v5",
    "ALE/Seaquest-v5",
    "ALE/SpaceInvaders-v5",
)


def _climb(t: np.ndarray, top: float, seed: int, bottom: float = 0.0) -> np.ndarray:
    """A noisy rising curve from ``bottom`` to about ``top`` over ``t``."""
    rng = np.random.default_rng(seed)
    frac = t / t[-1]
    return bottom + (top - bottom) * frac**1.5 + 0.05 * abs(top - bottom) * rng.standard_normal(len(t))


def _table1(root: Path) -> None:
    for env in MUJOCO:
        for seed in range(3):
            t = np.linspace(0, 2_400_000, 25)
            wall = t / (1500.0 + 600.0 * seed)  # seeds end at different times
            write_run(root, "table1", "trpo", env, seed, t, _climb(t, 3000, seed, -200), wall_clock_s=wall)
            te = np.linspace(0, 2_600_000, 30)
            write_run(root, "table1", "openai_es", env, seed, te, _climb(te, 1500, 10 + seed, -300),
                      wall_clock_s=te / (4000.0 + 1500.0 * seed))  # fmt: skip


def _decisive(root: Path) -> None:
    """ES alone, every run stopping at its target at its own time (the decisive scale's shape)."""
    targets = {"HalfCheetah-v5": 2385.0, "InvertedDoublePendulum-v5": 9104.0, "InvertedPendulum-v5": 1000.0,
               "Swimmer-v5": 128.0, "Walker2d-v5": 3300.0}  # fmt: skip
    for env, target in targets.items():
        for seed in range(5):
            t = np.linspace(0, 1_000_000 * (1 + 0.3 * seed), 20 + 4 * seed)
            y = np.minimum(_climb(t, 1.1 * target, seed), target)
            y[-1] = target
            write_run(root, "table1", "openai_es", env, seed, t, y, stopped_at_return=True, scale="decisive",
                      wall_clock_s=t / 3000.0)  # fmt: skip


def _table2(root: Path) -> None:
    for env in ATARI:
        for seed in range(3):
            t = np.linspace(0, 280_000, 8)
            for algo, top in (("openai_es", 400.0), ("a2c", 300.0)):
                write_run(
                    root, "table2", algo, env, seed, t, _climb(t, top, seed + len(algo)), env_kind="atari"
                )


def _frameskip(root: Path) -> None:
    for env in ("ALE/Breakout-v5", "ALE/Pong-v5", "ALE/SpaceInvaders-v5"):
        for fs in (1, 2, 3, 4):
            for seed in range(3):
                t = np.linspace(0, 150_000, 6)
                for algo, top in (("openai_es", 20.0), ("a2c", 15.0 + fs)):
                    write_run(root, "frameskip", algo, env, seed, t, _climb(t, top, seed + fs, -21.0),
                              env_kind="atari", frame_skip=fs)  # fmt: skip


def _scaling(root: Path) -> None:
    """ES on 1 to 8 workers under two cluster kinds, with this machine's measured costs (the
    projection figure)."""
    from esbench.analysis.projection import CALIBRATION_FILE
    from tests.test_projection import _raw

    for kind in ("local", "processes"):
        for workers in (1, 2, 4, 8):
            for seed in range(3):
                t = np.linspace(0, 300_000, 12)
                wall = t / (900.0 * min(workers, 2)) + seed
                run = write_run(
                    root / kind,
                    "scaling",
                    "openai_es",
                    "Hopper-v5",
                    seed,
                    t,
                    _climb(t, 1000, seed),
                    workers=workers,
                    wall_clock_s=wall,
                )
                cfg = OmegaConf.load(run / "config.yaml")
                cfg.cluster.kind = kind
                cfg.run_id = f"{cfg.run_id}-{kind}"
                OmegaConf.save(cfg, run / "config.yaml")
                summary = json.loads((run / "summary.json").read_text())
                (run / "summary.json").write_text(json.dumps({**summary, "run_id": cfg.run_id}))
                (root / "scaling").mkdir(parents=True, exist_ok=True)
                run.rename(root / "scaling" / str(cfg.run_id))
    CALIBRATION_FILE.parent.mkdir(parents=True, exist_ok=True)  # relative: the test's working directory
    CALIBRATION_FILE.write_text(json.dumps({"projection": _raw()}))


def _es_family(root: Path) -> None:
    algos = ("openai_es", "ars", "cma_es", "eggroll", "pgpe", "simple_es", "snes", "trpo")
    for env in ("HalfCheetah-v5", "Hopper-v5", "Swimmer-v5"):
        for k, algo in enumerate(algos):
            for seed in range(3):
                t = np.linspace(0, 400_000, 10)
                write_run(root, "es_family", algo, env, seed, t, _climb(t, 300.0 * (k + 1), seed + k))


def _population(root: Path) -> None:
    for env, target in (("InvertedPendulum-v5", 1000.0), ("Swimmer-v5", 128.0)):
        for pop, reach in ((40, 100_000.0), (200, 300_000.0), (1000, 1_200_000.0)):
            for seed in range(3):
                at = reach * (1 + 0.05 * seed)
                t = np.linspace(0, at, 12)
                y = np.minimum(target * t / at, target)
                write_run(root, "population", "openai_es", env, seed, t, y, stopped_at_return=True,
                          population=pop)  # fmt: skip


def _retention(root: Path) -> None:
    """The retention report's two-stage store, its sequence runs with drift at every evaluation
    point (the drift-curves figure)."""
    from tests.test_analysis_retention_report import _store

    _store(root)
    for metrics_file in (root / "retention").glob("*-seq-*/metrics.csv"):
        metrics = pd.read_csv(metrics_file)
        since = metrics["timesteps"] % 100
        metrics["drift_rel"] = np.where(metrics["eval_task"].notna(), 0.004 * since, np.nan)
        metrics["drift_sparsity_1e-6"] = np.where(metrics["eval_task"].notna(), 1 - 0.009 * since, np.nan)
        kl = np.where(metrics["timesteps"] >= 100, 20.0 * (metrics["timesteps"] - 100), np.nan)
        metrics["policy_kl"] = np.where(metrics["eval_task"].notna(), kl, np.nan)
        metrics.to_csv(metrics_file, index=False)


def _lm_retention(root: Path) -> None:
    from tests.test_lm_retention_report import SUPPORT, _condition_run

    for (algo, pop, awd), (reward, accuracy) in SUPPORT.items():
        for seed in range(3):
            _condition_run(root, algo, seed, reward, accuracy, pop, awd)


#: target -> (store builder, runs directory under the store root, figures the report draws at least).
STORES: dict[str, tuple[Callable[[Path], None], str, int]] = {
    "table1": (_table1, "table1", 4),
    "decisive": (_decisive, "table1", 3),
    "table2": (_table2, "table2", 2),
    "frameskip": (_frameskip, "frameskip", 2),
    "scaling": (_scaling, "scaling", 5),
    "es_family": (_es_family, "es_family", 2),
    "population": (_population, "population", 3),
    "retention": (_retention, "retention", 5),
    "lm_retention": (_lm_retention, "lm_retention", 2),
}


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Figure]]:
    """(stem, figure) of every figure saved while the test runs; the files are still written."""
    saved: list[tuple[str, Figure]] = []
    real = figures.savefig

    def capture(fig: Figure, stem: str | Path) -> list[Path]:
        saved.append((Path(stem).name, fig))
        return real(fig, stem)

    for name, module in list(sys.modules.items()):  # every analysis module that saves figures
        if name.startswith("esbench.analysis") and getattr(module, "savefig", None) is real:
            monkeypatch.setattr(module, "savefig", capture)
    return saved


@pytest.mark.artifacts
@pytest.mark.parametrize("name", sorted(STORES))
def test_every_report_figure_has_no_overlapping_text_and_its_legend_outside_the_data(
    name: str, tmp_path: Path, drawn: list[tuple[str, Figure]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a store may put files read from the working directory
    build, experiment, at_least = STORES[name]
    build(tmp_path / "runs")
    target = "table1" if name == "decisive" else name
    build_report(target, tmp_path / "runs" / experiment, tmp_path / "paper", allow_partial=True)
    assert len(drawn) >= at_least, [stem for stem, _ in drawn]
    problems = [f"{stem}: {p}" for stem, fig in drawn for p in layout_problems(fig)]
    assert problems == [], "\n".join(problems)


def _two_panels() -> tuple[Figure, list]:
    return figures.new_figure(2, ncols=2)


def test_the_check_finds_crowded_tick_labels() -> None:
    fig, (ax, _) = _two_panels()
    ax.set_xticks(np.arange(0, 600_001, 50_000))
    ax.set_xticklabels([str(v) for v in np.arange(0, 600_001, 50_000)])
    assert any("x tick" in p and "overlapping" in p for p in layout_problems(fig))


def test_the_check_finds_a_title_running_into_the_next_panel_and_wrapping_fixes_it() -> None:
    long = "hopper_mass: update sparsity since the stage began (tau=1e-06), every seed"
    fig, (a, b) = _two_panels()
    a.set_title(long)
    b.set_title(long)
    assert any("title" in p for p in layout_problems(fig))
    fig, (a, b) = _two_panels()
    figures.panel_text(a, long)
    figures.panel_text(b, long)
    assert layout_problems(fig) == []


def test_the_check_finds_a_legend_inside_the_data_and_the_figure_legend_is_outside() -> None:
    fig, (a, b) = _two_panels()
    a.plot([0, 1], [0, 1], label="ES (OpenAI) (3 seeds)")
    b.plot([0, 1], [1, 0], label="TRPO (3 seeds)")
    a.legend()
    assert any("legend" in p and "data area of panel 1" in p for p in layout_problems(fig))
    a.get_legend().remove()
    figures.figure_legend(fig, [a, b])
    assert layout_problems(fig) == []


def test_curves_show_each_seed_to_its_end_and_the_mean_only_where_every_seed_ran(
    tmp_path: Path, drawn: list[tuple[str, Figure]]
) -> None:
    _table1(tmp_path / "runs")
    report = build_report("table1", tmp_path / "runs" / "table1", tmp_path / "paper").read_text()
    figs = dict(drawn)
    wall = figs["curves_wall_clock_s"].axes[0]  # HalfCheetah-v5
    thin = [ln for ln in wall.get_lines() if ln.get_linewidth() < 1.0]
    thick = [ln for ln in wall.get_lines() if ln.get_linewidth() >= 1.0]
    ends = sorted(float(np.max(ln.get_xdata())) for ln in thin)
    # _table1: TRPO's seeds end at 2.4M / (1500 + 600 s) s, ES's at 2.6M / (4000 + 1500 s) s.
    expected = sorted(
        [2.4e6 / (1500 + 600 * s) for s in range(3)] + [2.6e6 / (4000 + 1500 * s) for s in range(3)]
    )
    assert ends == pytest.approx(expected)
    assert sorted(float(np.max(ln.get_xdata())) for ln in thick) == pytest.approx(
        [2.6e6 / 7000, 2.4e6 / 2700]
    )
    steps = figs["curves_timesteps"].axes[0]
    assert len(steps.collections) == 2  # a 95% band for each algorithm
    assert "95% Student-t band (n = 3 seeds per condition)" in report
    assert "R_min and R_max the lowest and highest evaluation return any algorithm reached" in report


def test_the_headline_ratio_figure_marks_the_papers_claims_and_the_hard_tasks(
    tmp_path: Path, drawn: list[tuple[str, Figure]]
) -> None:
    _decisive(tmp_path / "runs")
    report = build_report("table1", tmp_path / "runs" / "table1", tmp_path / "paper").read_text()
    ax = dict(drawn)["table1_headline"].axes[0]
    verticals = sorted(float(ln.get_xdata()[0]) for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1
                       and len(ln.get_xdata()) == 2 and ln.get_color() == "#000000")  # fmt: skip
    assert verticals == pytest.approx([1 / 3, 1.0, 10.0])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "Walker2d (hard)" in labels and "Swimmer" in labels
    assert "figures/table1_headline.png" in report and "n = 5 ES seeds per task" in report


def test_retention_conditions_of_one_algorithm_get_distinct_colours_and_labels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenAI-ES at two populations and with AWD beside the RL baselines: seven conditions, seven
    colours (the registry's name-hash fallback gave AWD and population 40 the same one), each
    labelled with its variant; a registered algorithm keeps its registry colour."""
    import esbench.baselines.registry
    import esbench.strategies  # noqa: F401  (registers the ES family)

    conditions = [
        "eggroll",
        "openai_es+awd@pop20",
        "openai_es@pop20",
        "openai_es@pop40",
        "pgpe",
        "ppo",
        "trpo",
    ]
    colours = figures.condition_colors(conditions)
    assert set(colours) == set(conditions)
    assert len(set(colours.values())) == len(conditions)
    for plain in ("eggroll", "pgpe", "ppo", "trpo"):
        assert colours[plain] == figures.algo_color(plain)
    assert colours["openai_es@pop20"] == figures.algo_color("openai_es")  # the plain population first
    assert figures.condition_colors(reversed(conditions)) == colours  # the same in every figure
    assert figures.algo_label("openai_es+awd@pop20") == "ES (OpenAI) +AWD pop 20"
    assert figures.algo_label("trpo") == "TRPO"

    rows = [
        {"sequence": "s", "stage_index": 0, "stage": "a", "algo": algo, "seed": seed,
         "run_id": f"{algo}-{seed}", "timesteps": t, "p": 0.1 * t / 100 + seed}
        for algo in conditions for seed in range(2) for t in (0, 100, 200)
    ]  # fmt: skip
    boundaries = pd.DataFrame({"sequence": ["s"], "stage_index": [0], "end_timesteps": [200.0]})
    drawn: list[Figure] = []
    monkeypatch.setattr(figures, "savefig", lambda fig, stem: drawn.append(fig) or [])
    figures.plot_retention_curves(pd.DataFrame(rows), boundaries, "unused")
    lines = [line for ax in drawn[0].axes for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert {line.get_label().split(" (n=")[0] for line in lines} >= {
        "ES (OpenAI) +AWD pop 20",
        "ES (OpenAI) pop 40",
    }
    assert len({line.get_color() for line in lines}) == len(conditions)
