"""``esbench bench``: measured throughput and memory, printed and saved as JSON.

    esbench bench                 # ES on HalfCheetah-v5: raw rate, 1 and 2 workers, memory
    esbench bench baselines       # SB3 baselines' training steps/s on one core
    esbench bench atari           # ES on Pong: frames/s, and ES over the emulator + batched CNN limit
    esbench bench es_family       # every ES variant: steps/s with 2 workers, master update time
    esbench bench eggroll         # EGGROLL against full-rank members, 6k to 1M parameters
    esbench bench comm            # bytes to/from workers per generation, 6k to 1M parameters
    esbench bench store           # metrics.csv: appending rows against rewriting it, 1k/5k rows
    esbench bench projection      # costs the scaling projection is calibrated from (report scaling)
    esbench bench lm              # LM ES members: EGGROLL's batched forward against plain inference
    esbench bench lm lm.model.hub_id=HuggingFaceTB/SmolLM2-135M-Instruct members=8
                                  # ... on a hub model (lm.model.*, members, prompts, repeats, full_rank)
    esbench bench calibrate [--out PATH] [--no-lm]
                                  # this machine's rates for cost estimates (a few minutes), saved
                                  # where `esbench reproduce` reads them (~/.cache/esbench/calibration.json)
    esbench bench all             # every benchmark above but calibrate

Each benchmark lives in its own module of this package; this one only dispatches and saves.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from esbench.bench.mujoco import (
    OUT_DIR,
    _es_one_core_row,
    _machine,
    _print_mujoco,
    bench_mujoco,
    markdown_rows,
)
from esbench.utils.io import atomic_write_json


def main(argv: list[str]) -> int:
    """``esbench bench [mujoco|baselines|atari|es_family|eggroll|comm|store|projection|lm|calibrate|all]``."""
    what = argv[0] if argv else "mujoco"
    allowed = (
        "mujoco",
        "baselines",
        "atari",
        "es_family",
        "eggroll",
        "comm",
        "store",
        "projection",
        "lm",
        "calibrate",
        "all",
    )
    if what in ("-h", "--help", "help"):
        print("usage:\n" + __doc__.split("\n\n")[1])
        return 0
    if what not in allowed:
        print(f"esbench: error: unknown benchmark {what!r}; allowed: {', '.join(allowed)}", file=sys.stderr)
        return 2
    if what == "calibrate":
        return _calibrate(argv[1:])
    lm_args: dict[str, Any] = {}
    if what == "lm":
        from esbench.bench.lm import parse_lm_args

        try:
            lm_args = parse_lm_args(argv[1:])
        except ValueError as e:
            print(f"esbench: error: bench lm {e}", file=sys.stderr)
            return 2
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": _machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    if what in ("mujoco", "all"):
        results["mujoco"] = bench_mujoco()
        _print_mujoco(results["mujoco"])
    if what in ("baselines", "all"):
        from esbench.bench.baselines import bench_baselines

        results["baselines"] = [
            *bench_baselines(),
            _es_one_core_row(results.get("mujoco")),
            # Atari: the A3C CNN forward + backward on CPU dominates; 2,000 agent steps each.
            *bench_baselines(
                timesteps=2_000, algos=("a2c", "ppo"), env_overrides=["env=atari", "env.game=Pong"]
            ),
        ]
        print("\n" + markdown_rows(results["baselines"]))
    if what in ("atari", "all"):
        from esbench.bench.atari import bench_atari, format_atari_bench

        results["atari"] = bench_atari()
        if what == "atari":  # the headline ratio at the top level of bench-atari.json
            results["limit_steps_per_s"] = results["atari"]["limit_steps_per_s"]
            results["es_over_emulator_plus_cnn"] = results["atari"]["es_over_emulator_plus_cnn"]
            results["es_over_emulator_plus_cnn_cpu"] = results["atari"]["es_over_emulator_plus_cnn_cpu"]
        print("\n" + format_atari_bench(results["atari"]))
    if what in ("es_family", "all"):
        from esbench.bench.es_family import bench_es_family, format_es_family

        results["es_family"] = bench_es_family()
        print("\n" + format_es_family(results["es_family"]))
    if what in ("comm", "all"):
        from esbench.bench.comm import bench_comm, format_comm

        results["comm"] = bench_comm()
        print("\n" + format_comm(results["comm"]))
    if what in ("eggroll", "all"):
        from dataclasses import asdict

        from esbench.bench.eggroll import bench_eggroll, format_table

        eggroll_rows = bench_eggroll()
        results["eggroll"] = [asdict(r) for r in eggroll_rows]
        print("\n" + format_table(eggroll_rows))
    if what in ("store", "all"):
        from esbench.bench.store import bench_store, format_store

        results["store"] = bench_store()
        print("\n" + format_store(results["store"]))
    if what in ("projection", "all"):
        from esbench.bench.projection import bench_projection, format_projection

        results["projection"] = bench_projection()
        print("\n" + format_projection(results["projection"]))
    if what in ("lm", "all"):
        from esbench.bench.lm import bench_lm, format_lm

        results["lm"] = bench_lm(**lm_args)
        if what == "lm":  # the headline ratio at the top level of bench-lm.json
            results["eggroll_over_batched_inference"] = results["lm"]["eggroll_over_batched_inference"]
        print("\n" + format_lm(results["lm"]))
    path = OUT_DIR / f"bench-{what}.json"
    atomic_write_json(path, results)
    print(f"\nesbench: benchmark written to {path}")
    return 0


def _calibrate(argv: list[str]) -> int:
    """``esbench bench calibrate [--out PATH] [--no-lm]``: measure, save the calibration where cost
    estimates read it (or ``--out``), and a copy as ``results/bench/bench-calibrate.json``."""
    from pathlib import Path

    from esbench.bench.calibrate import calibrate, format_calibration
    from esbench.utils.calibration import calibration_path, save_calibration

    out: Path | None = None
    lm = True
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--out" and args:
            out = Path(args.pop(0))
        elif arg.startswith("--out="):
            out = Path(arg.split("=", 1)[1])
        elif arg == "--no-lm":
            lm = False
        else:
            print(
                f"esbench: error: bench calibrate: unknown argument {arg!r}; allowed: --out PATH, --no-lm",
                file=sys.stderr,
            )
            return 2
    data = calibrate(lm=lm)
    path = save_calibration(data, out or calibration_path())
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    atomic_write_json(OUT_DIR / "bench-calibrate.json", {**data, "calibrate": data})
    print("\n" + format_calibration(data))
    print(f"\nesbench: calibration written to {path} (cost estimates now use it; esbench reproduce --list)")
    return 0
