"""Config checks that need a policy's size, registered when :mod:`esbench.policies` is imported."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.validate import register_check

_MAX_ACTIONS = 18  # ALE's full action set: an upper bound on any game's minimal set


@register_check
def check_noise_table_fits_cnn(cfg: DictConfig) -> None:
    """An ES noise table must hold at least one slice as long as the CNN's parameter vector."""
    size = OmegaConf.select(cfg, "algo.noise_table_size", default=None)
    if cfg.env.kind != "atari" or cfg.policy.kind != "cnn" or size is None:
        return
    from esbench.policies.cnn import a3c_cnn_num_params

    shape = {"in_channels": int(cfg.env.frame_stack), "screen_size": int(cfg.env.screen_size)}
    if int(size) >= a3c_cnn_num_params(_MAX_ACTIONS, vbn=True, **shape):
        return  # fits whatever the game's action count: no env needed
    from esbench.envs.atari import make_atari_env

    env = make_atari_env(cfg.env, training=False)
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    env.close()
    needed = a3c_cnn_num_params(n_actions, vbn=True, **shape)
    if int(size) < needed:
        raise ConfigError(
            f"algo.noise_table_size={int(size)} is smaller than the Atari CNN's {needed} parameters; "
            f"allowed: algo.noise_table_size >= {needed}"
        )
