"""An SB3 actor-critic started from a given policy (``init.from_run``): load, initialize, warm up.

The actor's mean network (``mlp_extractor.policy_net`` then ``action_net``) is the ruler's MLP, so
it is loaded from the base's flat vector (:class:`~esbench.training.init_policy.BasePolicy`); the
base's observation normalization becomes the VecNormalize statistics and clip. What the base does
not have is initialized as the config says: the Gaussian log std (``init.log_std``, the
algorithm's own when unset) and the value network, fresh from the run seed and then fitted on the
base policy's own rollouts (:func:`warm_up_value`) before the stage's budget starts counting.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize, unwrap_vec_normalize
from torch import nn
from torch.nn import functional as F

from esbench.training.init_policy import BasePolicy, ObsNorm

__all__ = ["load_base_policy", "obs_norm_of", "warm_up_value"]

#: Parameter names of an SB3 actor-critic's value network.
VALUE_PREFIXES = ("mlp_extractor.value_net.", "value_net.")


def _vec_normalize(model: BaseAlgorithm) -> VecNormalize | None:
    env = model.get_env()
    return unwrap_vec_normalize(env) if env is not None else None


def obs_norm_of(model: BaseAlgorithm) -> ObsNorm | None:
    """The normalization ``model`` acts with (its VecNormalize's statistics), None without one."""
    norm = _vec_normalize(model)
    if norm is None or not norm.norm_obs:
        return None
    rms = norm.obs_rms
    assert not isinstance(rms, dict)
    mean, var = np.asarray(rms.mean, np.float64), np.asarray(rms.var, np.float64)
    return ObsNorm(mean, var, float(rms.count), float(norm.clip_obs), 0.0, float(norm.epsilon))


def load_base_policy(model: BaseAlgorithm, base: BasePolicy, cfg: DictConfig) -> None:
    """Start ``model`` at ``base``: the actor's mean network, the log std (``init.log_std``) and
    the VecNormalize statistics and clip (so that ``normalize_obs`` divides by the base's std)."""
    policy: Any = model.policy
    layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)] + [policy.action_net]
    blocks = base.actor_blocks([(int(m.out_features), int(m.in_features)) for m in layers])
    with torch.no_grad():
        for k, layer in enumerate(layers):
            layer.weight.copy_(torch.from_numpy(np.array(blocks[2 * k], np.float32)))
            layer.bias.copy_(torch.from_numpy(np.array(blocks[2 * k + 1], np.float32)))
        log_std = cfg.init.log_std
        if log_std is not None and isinstance(getattr(policy, "log_std", None), torch.Tensor):
            policy.log_std.fill_(float(log_std))
    norm = _vec_normalize(model)
    if base.obs is not None and norm is not None:
        rms = norm.obs_rms
        assert not isinstance(rms, dict)
        rms.mean = np.array(base.obs.mean, np.float64)
        rms.var = np.maximum(np.square(base.obs.std) - norm.epsilon, 0.0)
        rms.count = float(base.obs.count)
        norm.clip_obs = float(base.obs.clip)


def warm_up_value(model: BaseAlgorithm, cfg: DictConfig) -> dict[str, Any]:
    """Fit ``model``'s value network on the base policy's own rollouts before training starts.

    ``init.value_warmup_steps`` environment steps, in rollouts of the algorithm's own length
    (``n_steps x n_envs``, the same collection as training: GAE returns with the current value
    estimates); after each, ``init.value_warmup_epochs`` passes of minibatches
    (``init.value_warmup_batch_size``) of mean-squared error on its returns, with Adam
    (``init.value_warmup_lr``) on the value network's parameters alone: the actor, the log std and
    the algorithm's optimizer are untouched. The reward normalization learns the base's return
    scale on the way; the observation statistics are put back as the base's, so the first
    evaluation point still evaluates exactly the base. The steps are not the stage's (the budget
    and ``timesteps`` start at 0 after it).

    Returns:
        What the run records of it: ``value_warmup_steps``, ``value_warmup_s``,
        ``value_warmup_loss`` (the last minibatch's).
    """
    steps = int(cfg.init.value_warmup_steps)
    record: dict[str, Any] = {"value_warmup_steps": 0, "value_warmup_s": 0.0, "value_warmup_loss": None}
    if steps <= 0:
        return record
    t0 = time.perf_counter()
    m: Any = model
    params = [p for n, p in m.policy.named_parameters() if n.startswith(VALUE_PREFIXES)]
    optimizer = torch.optim.Adam(params, lr=float(cfg.init.value_warmup_lr))
    norm = _vec_normalize(model)
    obs_rms = copy.deepcopy(norm.obs_rms) if norm is not None else None
    _, callback = m._setup_learn(steps, callback=None, reset_num_timesteps=True)
    callback.on_training_start(locals(), globals())
    done, loss = 0, None
    while done < steps:
        m.collect_rollouts(m.env, callback, m.rollout_buffer, n_rollout_steps=m.n_steps)
        done += int(m.n_steps) * int(m.env.num_envs)
        m.policy.set_training_mode(True)
        for _ in range(int(cfg.init.value_warmup_epochs)):
            for batch in m.rollout_buffer.get(int(cfg.init.value_warmup_batch_size)):
                values = m.policy.predict_values(batch.observations).flatten()
                loss = F.mse_loss(batch.returns, values)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    if norm is not None and obs_rms is not None:
        norm.obs_rms = obs_rms
    m.num_timesteps = 0
    record.update(
        value_warmup_steps=done,
        value_warmup_s=time.perf_counter() - t0,
        value_warmup_loss=None if loss is None else float(loss.item()),
    )
    return record
