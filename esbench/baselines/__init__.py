"""RL baselines through Stable-Baselines3 / sb3-contrib (TRPO, A2C as the synchronous A3C, PPO, DQN).

``registry`` registers schemas, trainers and checks; ``configs`` holds the schemas (rl-baselines3-zoo
defaults); ``sb3`` builds the model on esbench's envs and networks; ``callback`` measures on the ES
ruler; ``evaluation`` runs the fixed-seed evaluation with the protocol of ``eval.policy``
(:mod:`esbench.config.eval_protocol`, whose config check importing this package registers);
``checkpoint`` makes exact snapshots; ``trainer`` runs a baseline as one Dask task.
"""

from esbench.config import eval_protocol as _eval_protocol  # noqa: F401 - registers check_eval_policy
