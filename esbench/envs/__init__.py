"""Environments: ``make_env(cfg)`` for MuJoCo, classic control, Atari and any registered Gymnasium id.

Importing this package registers the env config checks and the ``${atari_id:...}`` resolver.
"""

from esbench.envs import checks as _checks  # noqa: F401 - registers the env config checks
from esbench.envs.factory import check_env_id, known_env_ids, make_env, resolved_env_id
from esbench.envs.resolvers import register_resolvers

register_resolvers()

__all__ = ["check_env_id", "known_env_ids", "make_env", "resolved_env_id"]
