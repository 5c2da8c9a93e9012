"""Config checks for Atari runs, registered with :func:`esbench.config.validate.register_check`.

Importing :mod:`esbench.envs` registers them, and :func:`esbench.config.validate.validate` imports
:mod:`esbench.envs` (for the env-id check) before it runs the registered checks, so they apply to
every validated config. Each failure is one line naming the key, the value and what is allowed.
An unknown game is reported by the env-id check itself (:func:`esbench.envs.atari.resolve_game`:
close matches first, then the valid names).
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from esbench.config.validate import ConfigError, register_check

_MAX_ACTIONS = 18  # ALE's full action set: an upper bound on any game's minimal set


@register_check
def check_atari_policy(cfg: DictConfig) -> None:
    """Atari frames need the CNN; the CNN has no use for observation normalization."""
    if cfg.env.kind != "atari":
        return
    if cfg.policy.kind != "cnn":
        raise ConfigError(
            f"policy.kind={cfg.policy.kind!r} cannot act on Atari frames (env.kind='atari'); "
            "allowed: policy.kind=cnn"
        )
    if cfg.policy.obs_norm:
        raise ConfigError(
            "policy.obs_norm=true has no effect with policy.kind=cnn (virtual batch norm normalizes); "
            "allowed: policy.obs_norm=false"
        )


@register_check
def check_atari_kwargs(cfg: DictConfig) -> None:
    """``env.kwargs`` may not set what the Atari fields control (frame skip, sticky actions ...)."""
    if cfg.env.kind != "atari":
        return
    from esbench.envs.atari import _CONTROLLED_KWARGS

    clash = sorted(set(cfg.env.kwargs or {}) & set(_CONTROLLED_KWARGS))
    if clash:
        fields = "env.frame_skip, env.sticky_action_prob, env.full_action_space"
        raise ConfigError(f"env.kwargs may not set {', '.join(clash)}; allowed: use {fields} instead")


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
