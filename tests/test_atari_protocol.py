"""The Atari evaluation protocol of the Table 2 and frame-skip recipes: 10 episodes, no-op starts
from fresh evaluation seeds, the paper's 108,000-frame cap at every frame skip, at least 3 seeds."""

from __future__ import annotations

import pytest

from esbench.config.errors import ConfigError
from esbench.config.schema import EnvConfig
from esbench.envs.atari import make_atari_env
from esbench.recipes import all_jobs, get_recipe
from esbench.runner import load_components


def _cfg(**overrides) -> EnvConfig:
    return EnvConfig(name="pong", id="ALE/Pong-v5", kind="atari", game="Pong", **overrides)


@pytest.mark.parametrize("frame_skip", [1, 4])
def test_the_evaluation_cap_counts_frames_no_ops_included(frame_skip: int) -> None:
    """An evaluation env ends at eval_max_episode_frames (no-ops included) whatever the frame skip
    and the training cap; a training env keeps the training cap."""
    cfg = _cfg(frame_skip=frame_skip, max_episode_steps=3, eval_max_episode_frames=60)
    env = make_atari_env(cfg, training=False)
    _, info = env.reset(seed=7)
    frames, truncated, steps = int(info["frames"]), False, 0
    assert 1 <= frames <= 30  # the no-op start of this evaluation seed
    while not truncated:
        _, _, terminated, truncated, info = env.step(0)
        frames += int(info["frames"])
        steps += 1
        assert not terminated
    assert 60 <= frames < 60 + frame_skip and steps > 3  # past the training cap of 3 steps
    train = make_atari_env(cfg, training=True)
    train.reset(seed=7)
    assert [train.step(0)[3] for _ in range(3)] == [False, False, True]


def test_each_evaluation_episode_starts_from_its_own_no_ops() -> None:
    """Evaluation seeds eval.seed + k give different no-op starts (and the same again for the same k)."""
    env = make_atari_env(_cfg(eval_max_episode_frames=108_000), training=False)
    noops = [int(env.reset(seed=1_000_000 + k)[1]["frames"]) for k in range(10)]
    assert len(set(noops)) > 3 and all(1 <= n <= 30 for n in noops)
    assert int(env.reset(seed=1_000_000)[1]["frames"]) == noops[0]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env=atari", "env.eval_max_episode_frames=108001"], r"ALE ends every episode at 108,000 frames"),
        (["env.eval_max_episode_frames=1000"], r"applies to Atari only \(env.kind='mujoco'\)"),
        (["env=atari", "env.eval_max_episode_frames=0"], r"env.eval_max_episode_frames=0 is out of range"),
    ],
)
def test_a_bad_evaluation_cap_fails_naming_the_key(overrides: list[str], message: str) -> None:
    from esbench.config.compose import compose_run_config

    load_components()
    with pytest.raises(ConfigError, match=message):
        compose_run_config(overrides)


@pytest.mark.parametrize("name", ["table2", "frameskip"])
@pytest.mark.parametrize("scale", ["mini", "paper"])
def test_atari_recipes_evaluate_as_the_paper_on_three_seeds(name: str, scale: str) -> None:
    recipe = get_recipe(name)
    spec = recipe.scales[scale]
    assert len(spec["seeds"]) >= 3 and spec["budget"]["eval_episodes"] == 10
    jobs = all_jobs(recipe, scale)
    for job in jobs:
        o = dict(a.split("=", 1) for a in job)
        assert o["env.eval_max_episode_frames"] == "108000" and o["eval.episodes"] == "10"
        if name == "frameskip":  # equal frames per job and between evaluations at every frame skip
            fs = int(o["env.frame_skip"])
            assert 0 <= spec["budget"]["frames"] - int(o["budget.timesteps"]) * fs < fs
            assert 0 <= spec["budget"]["eval_interval_frames"] - int(o["eval.interval_timesteps"]) * fs < fs
            if scale == "mini":  # training episodes capped at the same frames at every frame skip
                assert int(o["env.max_episode_steps"]) * fs == 18_000


def test_atari_paper_jobs_compose_and_validate() -> None:
    """One job per (recipe, algorithm) at paper scale (mini's are composed by test_reproduce)."""
    from esbench.config.compose import compose_run_config

    load_components()
    for name in ("table2", "frameskip"):
        seen: set[str] = set()
        for job in all_jobs(get_recipe(name), "paper"):
            algo = next(o for o in job if o.startswith("algo="))
            if algo not in seen:
                seen.add(algo)
                cfg = compose_run_config(job)
                assert cfg.env.eval_max_episode_frames == 108_000 and cfg.eval.episodes == 10
        assert len(seen) == 2


def test_eval_interval_frames_needs_a_frames_budget(tmp_path) -> None:
    from esbench.recipes import RecipeError, load_recipes

    budget = "{timesteps: 10, eval_interval_frames: 5, eval_episodes: 1}"
    scale = f"{{seeds: [0], budget: {budget}, sweeps: [{{algo: a2c}}]}}"
    (tmp_path / "bad.yaml").write_text(
        f"description: x\nreport: frameskip\nscales: {{smoke: {scale}, mini: {scale}, paper: {scale}}}\n"
    )
    with pytest.raises(
        RecipeError, match=r"bad\.yaml: scales\.smoke\.budget\.eval_interval_frames needs a frames"
    ):
        load_recipes(tmp_path)
    both = scale.replace("timesteps: 10,", "frames: 10, eval_interval: 5,")
    (tmp_path / "bad.yaml").write_text(
        f"description: x\nreport: frameskip\nscales: {{smoke: {both}, mini: {both}, paper: {both}}}\n"
    )
    with pytest.raises(RecipeError, match="one of eval_interval / eval_interval_frames"):
        load_recipes(tmp_path)


def test_an_unset_evaluation_cap_leaves_the_run_id_as_before_the_key_existed() -> None:
    from omegaconf import OmegaConf

    from esbench.config.compose import compose_run_config
    from esbench.runner import config_hash

    load_components()
    for overrides in ([], ["env=atari"], ["env=atari", "algo=a2c"]):
        cfg = compose_run_config(overrides)
        data = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(data, dict) and data["env"].pop("eval_max_episode_frames") is None
        assert config_hash(cfg) == config_hash(OmegaConf.create(data)), overrides
    capped = compose_run_config(["env=atari", "env.eval_max_episode_frames=108000"])
    assert config_hash(capped) != config_hash(compose_run_config(["env=atari"]))
