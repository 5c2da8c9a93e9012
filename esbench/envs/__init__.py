"""Environments: ``make_env(cfg)`` for MuJoCo, classic control and Atari, plus debug envs."""

from esbench.envs import checks as _checks  # noqa: F401 - registers the Atari config checks
from esbench.envs.factory import check_env_id, known_env_ids, make_env, resolved_env_id

__all__ = ["check_env_id", "known_env_ids", "make_env", "resolved_env_id"]
