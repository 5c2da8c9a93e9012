"""Environments: ``make_env(cfg)`` for MuJoCo, classic control and Atari, plus debug envs."""

from esbench.envs.factory import check_env_id, known_env_ids, make_env, resolved_env_id

__all__ = ["check_env_id", "known_env_ids", "make_env", "resolved_env_id"]
