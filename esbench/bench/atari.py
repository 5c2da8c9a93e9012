"""Atari throughput: raw ALE rate, ES emulator frames/s with 1 and 2 workers, CNN share of rollouts.

:func:`bench_atari` measures, on this machine:

1. **Raw ALE**: agent steps/s and emulator frames/s of :func:`~esbench.envs.atari.make_atari_env`
   (the full preprocessing) with uniformly random actions, one process, no policy.
2. **Rollout profiles**: one process, one torch thread, the run's CNN policy (VBN reference batch
   included) playing a few differently-perturbed members as an ES worker does, once one by one
   through :func:`~esbench.policies.episode.run_episode` (``algo.rollout_batch=1``) and once in
   lockstep through :func:`~esbench.runtime.lockstep.run_lockstep` with
   :class:`~esbench.policies.cnn.BatchedCNN`: the share of rollout time spent in inference, in
   loading a member (once per episode: the VBN reference forward pass), and in the rest (the
   emulator and preprocessing).
3. **ES**: short OpenAI-ES runs through :func:`esbench.runner.run` on a fresh LocalCluster of
   1 and 2 workers (``tracker=none``): emulator frames/s and agent steps/s, steady state (the
   first generation, with worker start-up, and the last, with the final evaluation, left out) and
   over the whole run (the summary's ``steps_per_s``).

4. **The CPU's limit for ES** (:func:`es_limit`): (a) the emulator's seconds per agent step with
   the runtime's preprocessing and a seeded reset starting every episode (:func:`emulator_step_s`),
   and (b) the CNN's seconds per member-step, batched at the run's ``algo.rollout_batch``
   (:func:`cnn_member_step_s`). ``limit_steps_per_s = 1 / (a + b)`` is what one worker could reach
   if it did nothing but step the emulator and run the batched network; ES's steady agent steps/s
   per worker over it is ``es_over_emulator_plus_cnn`` (the target: at least 0.85).

Frame counts are ``info["frames"]`` summed, no-op resets included, as in the run metrics.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from typing import Any

import numpy as np
import pandas as pd

from esbench.bench.steady import steady_rate, steady_window


def _atari_overrides(game: str, frame_skip: int, max_episode_steps: int) -> list[str]:
    return [
        "env=atari",
        f"env.game={game}",
        f"env.frame_skip={frame_skip}",
        f"env.max_episode_steps={max_episode_steps}",
    ]


def raw_ale_rate(
    game: str = "Pong", frame_skip: int = 4, seconds: float = 5.0, seed: int = 0
) -> dict[str, float]:
    """Agent steps/s and emulator frames/s of the preprocessed env with random actions, one process.

    Returns:
        ``{"agent_steps_per_s", "frames_per_s", "steps", "frames", "seconds"}``.
    """
    from esbench.config.compose import compose_run_config
    from esbench.envs import make_env

    cfg = compose_run_config(_atari_overrides(game, frame_skip, 27000))
    env = make_env(cfg.env, training=True)
    rng = np.random.default_rng(seed)
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    _, info = env.reset(seed=seed)
    steps, frames = 0, int(info["frames"])
    t0 = time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            for a in rng.integers(n_actions, size=500):
                _, _, terminated, truncated, info = env.step(int(a))
                frames += int(info["frames"])
                if terminated or truncated:
                    _, info = env.reset()
                    frames += int(info["frames"])
            steps += 500
        wall = time.perf_counter() - t0
    finally:
        env.close()
    return {
        "agent_steps_per_s": steps / wall,
        "frames_per_s": frames / wall,
        "steps": steps,
        "frames": frames,
        "seconds": wall,
    }


def emulator_step_s(
    game: str = "Pong",
    frame_skip: int = 4,
    max_episode_steps: int = 500,
    seconds: float = 5.0,
    seed: int = 0,
) -> dict[str, float]:
    """The emulator's seconds per agent step as an ES worker drives it, without the policy.

    The training env of the runtime (:func:`~esbench.envs.make_env`, the full preprocessing), every
    episode started by a seeded reset with a fresh seed (as every population member's is: ALE
    reloads the ROM on a seeded reset) and capped at ``max_episode_steps``, with uniformly random
    actions drawn before the clock starts.

    Returns:
        ``{"step_s"`` (seconds per agent step, resets included), ``"step_cpu_s"`` (the same in
        this process's CPU seconds: steadier than wall-clock on a shared machine), ``"reset_ms"`` (per seeded
        reset), ``"reset_share"``, ``"steps"``, ``"episodes"``, ``"seconds"}``.
    """
    from esbench.config.compose import compose_run_config
    from esbench.envs import make_env

    cfg = compose_run_config(_atari_overrides(game, frame_skip, max_episode_steps))
    env = make_env(cfg.env, training=True)
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    actions = np.random.default_rng(seed).integers(n_actions, size=4096).tolist()
    steps = episodes = 0
    reset_s = 0.0
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds or episodes == 0:
            t = time.perf_counter()
            env.reset(seed=seed + episodes)
            reset_s += time.perf_counter() - t
            episodes += 1
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(actions[steps % len(actions)])
                steps += 1
                done = terminated or truncated
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        env.close()
    return {
        "step_s": wall / steps,
        "step_cpu_s": cpu / steps,
        "reset_ms": 1e3 * reset_s / episodes,
        "reset_share": reset_s / wall,
        "steps": steps,
        "episodes": episodes,
        "seconds": wall,
    }


def cnn_member_step_s(
    game: str = "Pong",
    batch: int = 4,
    seconds: float = 3.0,
    seed: int = 0,
    sigma: float = 0.005,
) -> dict[str, float]:
    """The CNN's seconds per member-step, batched at ``batch`` as a worker runs it, one torch thread.

    ``batch`` members (each its own perturbed parameters, as in :func:`rollout_profile`) act on
    real observations (64 batches of frame stacks from seeded random play) through
    :class:`~esbench.policies.cnn.BatchedCNN` (``batch`` 1: :meth:`CNNPolicy.act`, the one-by-one
    path); the time of one call over ``batch``.

    Returns:
        ``{"member_step_s", "member_step_cpu_s"`` (CPU seconds), ``"call_ms", "batch", "calls",
        "seconds"}``.
    """
    import torch

    from esbench.config.compose import compose_run_config
    from esbench.envs import make_env
    from esbench.policies import make_policy
    from esbench.policies.cnn import BatchedCNN, CNNPolicy
    from esbench.utils.seeding import INIT_PARAMS, generator

    cfg = compose_run_config(_atari_overrides(game, 4, 27000))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    env = make_env(cfg.env, training=True)
    try:
        policy = make_policy(cfg.policy, env, cfg.env, seed)
        assert isinstance(policy, CNNPolicy)
        theta = policy.init_params(generator(seed, INIT_PARAMS))
        noise = np.random.default_rng(seed)
        members = [
            theta + np.float32(sigma) * noise.standard_normal(theta.size, dtype=np.float32)
            for _ in range(batch)
        ]
        n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
        frames = []
        obs, _ = env.reset(seed=seed)
        for _ in range(64 * batch):
            obs, _, terminated, truncated, _ = env.step(int(noise.integers(n_actions)))
            frames.append(obs)
            if terminated or truncated:
                obs, _ = env.reset()
        batches = [np.stack(frames[i * batch : (i + 1) * batch]) for i in range(64)]
        if batch > 1:
            player = BatchedCNN(policy, batch)
            for b, flat in enumerate(members):
                player.set_slot(b, flat)
            act: Any = player.act
        else:
            policy.set_params(members[0])
            act = policy.act
        for x in batches[:4]:  # warm-up: first-call allocations
            act(x if batch > 1 else x[0])
        calls = 0
        t0, c0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds or calls < len(batches):
            x = batches[calls % len(batches)]
            act(x if batch > 1 else x[0])
            calls += 1
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        env.close()
        torch.set_num_threads(threads)
    return {
        "member_step_s": wall / (calls * batch),
        "member_step_cpu_s": cpu / (calls * batch),
        "call_ms": 1e3 * wall / calls,
        "batch": batch,
        "calls": calls,
        "seconds": wall,
    }


def es_limit(
    emulator: dict[str, float],
    cnn: dict[str, float],
    es_steps_per_s: float,
    es_steps_per_cpu_s: float = float("nan"),
) -> dict[str, float]:
    """The CPU's limit for ES agent steps per worker, and how close ES comes to it.

    Args:
        emulator: :func:`emulator_step_s` (a: seconds per agent step).
        cnn: :func:`cnn_member_step_s` (b: seconds per member-step at the runtime's batch).
        es_steps_per_s: ES's steady agent steps/s per worker (c).
        es_steps_per_cpu_s: ES's steady agent steps per CPU-second of its rollouts (the workers'
            task CPU time): with (a) and (b) in CPU seconds, the same ratio measured in CPU time,
            which a busy machine disturbs far less than wall-clock (NaN: not measured).

    Returns:
        ``{"emulator_step_s": a, "cnn_member_step_s": b, "limit_steps_per_s": 1 / (a + b),
        "es_steps_per_s": c, "es_over_emulator_plus_cnn": c * (a + b)}``, and the CPU-time twins
        ``limit_steps_per_cpu_s``, ``es_steps_per_cpu_s``, ``es_over_emulator_plus_cnn_cpu``.
    """
    a, b = float(emulator["step_s"]), float(cnn["member_step_s"])
    a_cpu, b_cpu = float(emulator.get("step_cpu_s", np.nan)), float(cnn.get("member_step_cpu_s", np.nan))
    return {
        "emulator_step_s": a,
        "cnn_member_step_s": b,
        "limit_steps_per_s": 1.0 / (a + b),
        "es_steps_per_s": float(es_steps_per_s),
        "es_over_emulator_plus_cnn": float(es_steps_per_s) * (a + b),
        "limit_steps_per_cpu_s": 1.0 / (a_cpu + b_cpu),
        "es_steps_per_cpu_s": float(es_steps_per_cpu_s),
        "es_over_emulator_plus_cnn_cpu": float(es_steps_per_cpu_s) * (a_cpu + b_cpu),
    }


def rollout_profile(
    game: str = "Pong",
    frame_skip: int = 4,
    episodes: int = 3,
    max_episode_steps: int = 500,
    seed: int = 0,
    batch: int = 1,
    sigma: float = 0.005,
) -> dict[str, float]:
    """Where an ES worker's rollout time goes, measured in this process with one torch thread.

    Each episode is played as a worker plays a population member: its own perturbed parameters
    (``sigma`` times seeded Gaussian noise around the initial ones, so members do not share weights
    in the cache), its VBN statistics from the reference batch, then a fresh reset. ``batch`` 1 plays
    them one by one through :func:`run_episode` (``algo.rollout_batch=1``); ``batch`` B > 1 plays them
    B at a time in lockstep through :func:`run_lockstep` and :class:`BatchedCNN`, as a worker with
    ``algo.rollout_batch=B`` does (a task of ``episodes`` episodes).

    Returns:
        ``{"batch", "episodes", "steps", "frames", "seconds", "agent_steps_per_s", "frames_per_s",
        "act_share", "set_params_share", "env_share", "reset_share", "act_ms", "set_params_ms",
        "reset_ms"}``; the first three shares sum to 1 (``env_share``: the emulator,
        preprocessing and the loop itself); ``reset_share`` is the part of ``env_share`` spent in
        the seeded resets that start every episode (Gymnasium's ALE env reloads the ROM on a
        seeded reset: ~0.1 s each here, against a few ms unseeded); ``act_ms`` is per agent step,
        ``set_params_ms`` and ``reset_ms`` per episode.
    """
    import torch

    from esbench.config.compose import compose_run_config
    from esbench.envs import make_env
    from esbench.policies import make_policy
    from esbench.policies.cnn import BatchedCNN, CNNPolicy
    from esbench.policies.episode import run_episode
    from esbench.runtime.lockstep import EpisodeJob, run_lockstep
    from esbench.runtime.worker import balanced_batch
    from esbench.utils.seeding import INIT_PARAMS, generator

    cfg = compose_run_config(_atari_overrides(game, frame_skip, max_episode_steps))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    slots = balanced_batch(episodes, batch)
    envs = [make_env(cfg.env, training=True) for _ in range(slots)]
    try:
        policy = make_policy(cfg.policy, envs[0], cfg.env, seed)
        assert isinstance(policy, CNNPolicy)
        theta = policy.init_params(generator(seed, INIT_PARAMS))
        noise = np.random.default_rng(seed)
        eps = [noise.standard_normal(theta.size, dtype=np.float32) for _ in range(episodes)]
        jobs = [EpisodeJob(theta + np.float32(sigma) * e, seed + k) for k, e in enumerate(eps)]
        player: Any = BatchedCNN(policy, slots) if batch > 1 else policy
        act, set_params = player.act, (player.set_slot if batch > 1 else player.set_params)
        act_s = set_s = 0.0

        def timed_act(obs: np.ndarray) -> Any:
            nonlocal act_s
            t = time.perf_counter()
            out = act(obs)
            act_s += time.perf_counter() - t
            return out

        def timed_set(*args: Any) -> None:
            nonlocal set_s
            t = time.perf_counter()
            set_params(*args)
            set_s += time.perf_counter() - t

        reset_s, resets = 0.0, 0

        def timed_reset(env: Any) -> Any:
            reset = env.reset

            def timed(*args: Any, **kwargs: Any) -> Any:
                nonlocal reset_s, resets
                t = time.perf_counter()
                out = reset(*args, **kwargs)
                reset_s += time.perf_counter() - t
                resets += 1
                return out

            return timed

        for env in envs:  # every episode starts with a seeded reset, as on a worker
            env.reset = timed_reset(env)  # type: ignore[method-assign]
        player.act = timed_act
        t0 = time.perf_counter()
        if batch > 1:
            player.set_slot = timed_set
            played = run_lockstep(envs, player, jobs)
        else:
            played = []
            for job in jobs:
                timed_set(job.params)
                played.append(run_episode(envs[0], player, job.seed))
        total = time.perf_counter() - t0
    finally:
        for env in envs:
            env.close()
        torch.set_num_threads(threads)
    steps = sum(ep.length for ep in played)
    frames = sum(ep.frames for ep in played)
    return {
        "batch": slots,
        "episodes": episodes,
        "steps": steps,
        "frames": frames,
        "seconds": total,
        "agent_steps_per_s": steps / total,
        "frames_per_s": frames / total,
        "act_share": act_s / total,
        "set_params_share": set_s / total,
        "env_share": 1.0 - (act_s + set_s) / total,
        "reset_share": reset_s / total,
        "act_ms": 1e3 * act_s / max(steps, 1),
        "set_params_ms": 1e3 * set_s / episodes,
        "reset_ms": 1e3 * reset_s / max(resets, 1),
    }


def es_atari_throughput(
    workers: int,
    generations: int,
    game: str = "Pong",
    frame_skip: int = 4,
    max_episode_steps: int = 500,
    population_size: int = 16,
    extra: list[str] | None = None,
) -> dict[str, Any]:
    """Run OpenAI-ES on Atari for ``generations`` on a fresh LocalCluster of ``workers``.

    Returns:
        ``{"workers", "generations", "timesteps", "frames", "wall_clock_s", "run_steps_per_s",
        "run_frames_per_s", "steady_steps_per_s", "steady_frames_per_s", "steady_steps_per_cpu_s"}``
        (steady: generations 2 .. n-1, i.e. without worker start-up and the final evaluation,
        :func:`~esbench.bench.steady.steady_window`; NaN below 3 generations; per CPU-second: of
        the workers' rollout tasks, the metrics' ``cpu_s``).
    """
    from esbench.config.compose import compose_run_config
    from esbench.runner import run

    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_run_config(
            [
                *_atari_overrides(game, frame_skip, max_episode_steps),
                "algo=openai_es",
                f"algo.population_size={population_size}",
                "tracker=none",
                "tracker.console=false",
                f"cluster.n_workers={workers}",
                f"budget.generations={generations}",
                "budget.timesteps=1000000000",
                "eval.interval_timesteps=1000000000",
                f"eval.episodes={workers}",
                f"results_dir={tmp}",
                *(extra or []),
            ]
        )
        outcome = run(cfg)
        metrics = pd.read_csv(outcome.run_dir / "metrics.csv")
    s = outcome.summary
    wall = float(s["wall_clock_s"])
    return {
        "workers": workers,
        "generations": int(s["generations"]),
        "timesteps": int(s["total_timesteps"]),
        "frames": int(s["total_frames"]),
        "wall_clock_s": wall,
        "run_steps_per_s": float(s["steps_per_s"]),
        "run_frames_per_s": float(s["total_frames"]) / max(wall, 1e-9),
        "steady_steps_per_s": steady_rate(metrics, "timesteps"),
        "steady_frames_per_s": steady_rate(metrics, "frames"),
        "steady_steps_per_cpu_s": _steady_per_cpu_s(metrics),
    }


def _steady_per_cpu_s(metrics: pd.DataFrame) -> float:
    """Agent steps per CPU-second of the rollouts over :func:`~esbench.bench.steady.steady_window`."""
    window = steady_window(metrics)
    if len(window) < 2:
        return math.nan
    cpu = float(window["cpu_s"].iloc[-1] - window["cpu_s"].iloc[0])
    steps = float(window["timesteps"].iloc[-1] - window["timesteps"].iloc[0])
    return steps / cpu if cpu > 0 else math.nan


def _averaged(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    """Two measurements of the same thing combined: seconds-per-unit fields averaged, counts summed."""
    out = {}
    for key, value in first.items():
        summed = key in ("steps", "episodes", "calls", "seconds")
        out[key] = value + second[key] if summed else (value if key == "batch" else (value + second[key]) / 2)
    return out


def bench_atari(
    game: str = "Pong",
    workers: tuple[int, ...] = (1, 2),
    seconds: float = 30.0,
    frame_skip: int = 4,
    max_episode_steps: int = 500,
    population_size: int = 16,
    raw_seconds: float = 5.0,
    profile_episodes: int = 4,
    rollout_batch: int = 4,
    limit_seconds: float = 5.0,
    repeats: int = 3,
) -> dict[str, Any]:
    """The Atari benchmark: raw ALE rate, rollout profiles, ES throughput for each worker count, and
    ES against the CPU's limit (emulator + batched CNN).

    Args:
        game: Any ALE game name (see :func:`esbench.envs.atari.resolve_game`).
        workers: Worker counts of the ES runs.
        seconds: Rough wall-clock length of each ES run (its generations are sized from the
            profiled one-process rollout rate).
        frame_skip: ``env.frame_skip``.
        max_episode_steps: Episode cap (agent steps) of the profile and the ES runs.
        population_size: ES perturbations per generation (the same for every worker count).
        raw_seconds: Length of the raw ALE measurement.
        profile_episodes: Episodes of each one-process rollout profile (the same members one by
            one and in lockstep).
        rollout_batch: ``algo.rollout_batch`` of the lockstep profile, the CNN measurement and
            the ES runs (1: every member one by one); conf/family_env/es_atari.yaml sets 4.
        limit_seconds: Length of each of the emulator and CNN measurements of the limit (half
            right before an ES run, half right after, averaged).
        repeats: ES runs at the first worker count, each bracketed by its own measurement of the
            limit. On a shared machine the speed of the same work drifts by 5-10% between
            minutes, in the limit's parts and in ES alike; the headline ratio is the median of
            the repeats' ratios (odd ``repeats`` give an actual repeat), and all of them are kept.

    Returns:
        ``{"game", "env_id", "frame_skip", "cpu_count", "rollout_batch", "raw": raw_ale_rate(...),
        "profile": rollout_profile(...) one by one, "profile_lockstep": rollout_profile(...) in
        lockstep (absent when ``rollout_batch`` is 1), "es": [es_atari_throughput(...) per worker
        count, each with its ``es_over_emulator_plus_cnn``; the first: the median repeat],
        "repeats": [{"es_over_emulator_plus_cnn", "es_over_emulator_plus_cnn_cpu",
        "steady_steps_per_s", "limit_steps_per_s"} per repeat, in order], "speedup": {workers:
        steady frames/s over that of the first entry}, "emulator": emulator_step_s(...), "cnn":
        cnn_member_step_s(...) (both around the median repeat), "limit": es_limit(...) of the first
        ES entry, "limit_steps_per_s", "es_over_emulator_plus_cnn"}`` (the last two: the first
        entry's).
    """
    from esbench.envs.atari import resolve_game

    if repeats < 1:
        raise ValueError(f"repeats={repeats}: at least one ES run is needed")
    raw = raw_ale_rate(game, frame_skip, raw_seconds)
    profile = rollout_profile(game, frame_skip, profile_episodes, max_episode_steps)
    lockstep = (
        rollout_profile(game, frame_skip, profile_episodes, max_episode_steps, batch=rollout_batch)
        if rollout_batch > 1
        else None
    )
    fastest = max(profile, lockstep or profile, key=lambda p: p["agent_steps_per_s"])
    mean_len = profile["steps"] / profile["episodes"]

    def limit_parts() -> tuple[dict[str, float], dict[str, float]]:
        return (
            emulator_step_s(game, frame_skip, max_episode_steps, limit_seconds / 2),
            cnn_member_step_s(game, rollout_batch, limit_seconds / 2),
        )

    def measured(w: int) -> tuple[dict[str, Any], dict[str, float], dict[str, float]]:
        """One ES run of ``w`` workers, bracketed by the limit's parts (measured right before and
        right after, averaged: the ratio compares the two, so they are taken minutes apart at most)."""
        per_gen_s = population_size * mean_len / (fastest["agent_steps_per_s"] * w)
        generations = max(6, math.ceil(seconds / per_gen_s))  # steady: >= 4 generations
        before = limit_parts()
        row = es_atari_throughput(
            w,
            generations,
            game,
            frame_skip,
            max_episode_steps,
            population_size,
            extra=[f"algo.rollout_batch={rollout_batch}"],
        )
        after = limit_parts()
        emulator, cnn = _averaged(before[0], after[0]), _averaged(before[1], after[1])
        ratio = es_limit(emulator, cnn, row["steady_steps_per_s"] / w, row["steady_steps_per_cpu_s"])
        row["es_over_emulator_plus_cnn"] = ratio["es_over_emulator_plus_cnn"]
        row["es_over_emulator_plus_cnn_cpu"] = ratio["es_over_emulator_plus_cnn_cpu"]
        row["limit_steps_per_s"] = ratio["limit_steps_per_s"]
        return row, emulator, cnn

    first_runs = [measured(workers[0]) for _ in range(repeats)]
    ranked = sorted(first_runs, key=lambda run: run[0]["es_over_emulator_plus_cnn"])
    median_row, emulator, cnn = ranked[(len(ranked) - 1) // 2]
    rows = [median_row] + [measured(w)[0] for w in workers[1:]]
    first = rows[0]
    limit = es_limit(
        emulator, cnn, first["steady_steps_per_s"] / first["workers"], first["steady_steps_per_cpu_s"]
    )
    repeat_rows = [
        {k: run[0][k] for k in ("es_over_emulator_plus_cnn", "es_over_emulator_plus_cnn_cpu",
                                "steady_steps_per_s", "limit_steps_per_s")}
        for run in first_runs
    ]  # fmt: skip
    base = rows[0]["steady_frames_per_s"]
    return {
        "game": game,
        "env_id": resolve_game(game),
        "frame_skip": frame_skip,
        "cpu_count": os.cpu_count(),
        "rollout_batch": rollout_batch,
        "raw": raw,
        "profile": profile,
        **({"profile_lockstep": lockstep} if lockstep is not None else {}),
        "es": rows,
        "repeats": repeat_rows,
        "speedup": {r["workers"]: r["steady_frames_per_s"] / base for r in rows},
        "emulator": emulator,
        "cnn": cnn,
        "limit": limit,
        "limit_steps_per_s": limit["limit_steps_per_s"],
        "es_over_emulator_plus_cnn": limit["es_over_emulator_plus_cnn"],
        "es_over_emulator_plus_cnn_cpu": limit["es_over_emulator_plus_cnn_cpu"],
    }


def format_atari_bench(result: dict[str, Any]) -> str:
    """The Atari benchmark as Markdown: the one-process rates (one by one, and in lockstep when
    measured), then ES per worker count."""
    raw = result["raw"]
    lines = [
        f"ES on {result['env_id']} at frame-skip {result['frame_skip']} ({result['cpu_count']} cores)",
        "",
        "| measurement | agent steps/s | frames/s | notes |",
        "|---|---|---|---|",
        f"| raw ALE, random actions, one process | {raw['agent_steps_per_s']:,.0f} | "
        f"{raw['frames_per_s']:,.0f} | |",
    ]
    profiles = [("one by one", result["profile"])]
    if "profile_lockstep" in result:
        profiles.append((f"{result['profile_lockstep']['batch']} in lockstep", result["profile_lockstep"]))
    for how, prof in profiles:
        share = prof["agent_steps_per_s"] / raw["agent_steps_per_s"]
        lines.append(
            f"| ES rollout, one process (CNN policy, members {how}) | {prof['agent_steps_per_s']:,.0f} | "
            f"{prof['frames_per_s']:,.0f} | {share:.2f} of raw ALE; "
            f"CNN act {prof['act_share']:.0%} of the time ({prof['act_ms']:.2f} ms/step), "
            f"emulator {prof['env_share']:.0%} (of which seeded resets {prof['reset_share']:.0%}, "
            f"{prof['reset_ms']:.0f} ms each), set params {prof['set_params_share']:.0%} |"
        )
    batch = result.get("rollout_batch")
    for row in result["es"]:
        speedup = result["speedup"][row["workers"]]
        limit = raw["frames_per_s"] * row["workers"]
        lines.append(
            f"| ES, {row['workers']} worker(s), steady | {row['steady_steps_per_s']:,.0f} | "
            f"{row['steady_frames_per_s']:,.0f} | {speedup:.2f}x of 1 worker; "
            f"{row['steady_frames_per_s'] / limit:.2f} of raw ALE x workers ({limit:,.0f} frames/s); "
            f"{row['generations']} generations" + (f"; rollout_batch {batch}" if batch else "")
            + (f"; {row['es_over_emulator_plus_cnn']:.2f} of emulator + CNN per worker"
               if "es_over_emulator_plus_cnn" in row else "") + " |"
        )  # fmt: skip
    if "limit" in result:
        lim, emu, cnn = result["limit"], result["emulator"], result["cnn"]
        lines += [
            "",
            f"CPU limit per worker: emulator {1e3 * lim['emulator_step_s']:.3f} ms per agent step "
            f"(preprocessing and a seeded reset every episode, {emu['reset_ms']:.0f} ms each, "
            f"{emu['reset_share']:.0%} of its time) + CNN {1e3 * lim['cnn_member_step_s']:.3f} ms per "
            f"member-step (batch {cnn['batch']}) -> limit_steps_per_s {lim['limit_steps_per_s']:,.0f}; "
            f"ES {lim['es_steps_per_s']:,.0f} agent steps/s per worker -> es_over_emulator_plus_cnn "
            f"{lim['es_over_emulator_plus_cnn']:.2f} (target >= 0.85). In CPU time (steadier on a busy "
            f"machine): limit {lim['limit_steps_per_cpu_s']:,.0f} agent steps per CPU-second, ES "
            f"{lim['es_steps_per_cpu_s']:,.0f} -> es_over_emulator_plus_cnn_cpu "
            f"{lim['es_over_emulator_plus_cnn_cpu']:.2f}.",
        ]
    if len(result.get("repeats", [])) > 1:
        reps = result["repeats"]
        wall = ", ".join(f"{r['es_over_emulator_plus_cnn']:.2f}" for r in reps)
        cpu = ", ".join(f"{r['es_over_emulator_plus_cnn_cpu']:.2f}" for r in reps)
        lines.append(
            f"The ratio is the median of {len(reps)} ES runs, each bracketed by its own measurement "
            f"of the limit, in the order run: {wall} (CPU time: {cpu})."
        )
    return "\n".join(lines)
