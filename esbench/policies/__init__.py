"""Policies over flat parameter vectors: the MuJoCo MLP and the Atari CNN with virtual batch norm."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from esbench.policies import checks as _checks  # noqa: F401 - registers the policy config checks
from esbench.policies.base import Policy
from esbench.policies.mlp import MLPPolicy
from esbench.policies.obs_norm import ObsStats


def make_policy(policy_cfg: Any, env: gym.Env, env_cfg: Any = None, seed: int = 0) -> Policy:
    """The policy a config names, shaped for ``env``'s spaces.

    Args:
        policy_cfg: a ``PolicyConfig``.
        env: an environment from :func:`esbench.envs.make_env` (for its spaces).
        env_cfg: the ``EnvConfig`` (the Atari CNN collects its VBN reference batch from it).
        seed: the run seed (the VBN reference batch is collected from its ``VBN_REFERENCE`` stream).
    """
    obs_shape = tuple(env.observation_space.shape or ())
    act_space = env.action_space
    if policy_cfg.kind == "cnn":
        from esbench.policies.cnn import CNNPolicy, collect_reference_batch
        from esbench.utils.seeding import VBN_REFERENCE, derive_seed

        assert isinstance(act_space, gym.spaces.Discrete), "the Atari CNN needs discrete actions"
        # One batch per run: the same on every worker and in every run with this seed (promise 1).
        ref_seed = derive_seed(seed, VBN_REFERENCE)
        ref = collect_reference_batch(env_cfg, int(policy_cfg.vbn_reference_size), ref_seed)
        return CNNPolicy(obs_shape, int(act_space.n), ref)
    obs_dim = int(np.prod(obs_shape))
    stage_id = list(getattr(env_cfg, "stage_id", None) or []) if env_cfg is not None else []
    raw_tail = int(stage_id[1]) if stage_id else 0  # the one-hot stage id passes unnormalized
    if isinstance(act_space, gym.spaces.Discrete):
        return MLPPolicy(
            obs_dim,
            1,
            policy_cfg.hidden_sizes,
            policy_cfg.activation,
            discrete_n=int(act_space.n),
            obs_norm=policy_cfg.obs_norm,
            obs_clip=policy_cfg.obs_clip,
            bias=bool(policy_cfg.get("bias", True)),
            raw_tail=raw_tail,
        )
    assert isinstance(act_space, gym.spaces.Box), f"unsupported action space {act_space}"
    return MLPPolicy(
        obs_dim,
        int(np.prod(act_space.shape)),
        policy_cfg.hidden_sizes,
        policy_cfg.activation,
        action_bins=int(policy_cfg.action_bins),
        action_low=act_space.low,
        action_high=act_space.high,
        obs_norm=policy_cfg.obs_norm,
        obs_clip=policy_cfg.obs_clip,
        bias=bool(policy_cfg.get("bias", True)),
        raw_tail=raw_tail,
    )


__all__ = ["MLPPolicy", "ObsStats", "Policy", "make_policy"]
