"""RL baselines through Stable-Baselines3 / sb3-contrib (TRPO, A2C as the synchronous A3C, PPO, DQN).

The SB3 adapter: ``registry`` registers schemas and checks; ``configs`` holds the schemas
(rl-baselines3-zoo defaults); ``sb3`` builds the model on esbench's envs and networks;
``evaluation`` runs the fixed-seed evaluation with the protocol of ``eval.policy``
(:mod:`esbench.config.eval_protocol`, whose config check importing this package registers). The
training loop, its callback and its exact snapshots are :mod:`esbench.training`'s
(:mod:`esbench.training.sb3`).
"""

from esbench.config import eval_protocol as _eval_protocol  # noqa: F401 - registers check_eval_policy
