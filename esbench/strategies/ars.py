"""ARS: Mania, Guy, Recht (2018), "Simple random search provides a competitive approach to
reinforcement learning", arXiv:1803.07055.

Augmented Random Search, Algorithm 2 of the paper (V1 and V2, each with the top-b refinement "-t"),
as its reference code does it (github.com/modestyachts/ARS, ``code/ars.py``). Per iteration j:

* N directions delta_1..delta_N ~ N(0, I), each evaluated in both signs: r_k(+) = r(M + nu delta_k),
  r_k(-) = r(M - nu delta_k)  (Alg. 2, line 5; here nu = ``sigma``, N = ``population_size / 2``).
* Keep the b directions with the largest max(r_k(+), r_k(-))  (line 6; ``top_directions``).
* sigma_R = the standard deviation of the 2b returns kept  (line 7).
* The plain SGD step, no optimizer state  (line 7)::

      M_{j+1} = M_j + alpha / (b sigma_R) * sum_{k=1}^{b} (r_(k)(+) - r_(k)(-)) delta_(k)

V1 acts on raw states; V2 on states normalized by the running mean and standard deviation of *all*
states seen in training so far (line 8). The normalization belongs to the policy (``policy.obs_norm``,
fed by the runtime's observation sums), so here V1/V2 is a config matter: ``conf/algo/ars.yaml``
sets ``policy.obs_norm`` from ``algo.version`` (v1: off; v2 and the default ``auto``: on) and makes
every rollout report its observation sums (``obs_norm_fraction: 1.0``); an env file merged later
may still turn normalization off (``env=cartpole`` does), in which case ``auto`` means V1 and an
explicit ``v2`` is refused by :func:`check_ars`, which refuses any version/``policy.obs_norm``
mismatch. The paper's policy is linear with no bias (``policy.hidden_sizes=[]``,
``policy.bias=false``) and acts continuously.

Hyperparameters: ``conf/algo/ars.yaml`` holds the reference code's README example (N = 8, every
direction used); on the paper's six MuJoCo tasks, ``conf/algo_env/ars_<env>.yaml`` sets the ARS V2-t
values of the paper's Table 9 (alpha, nu, N, b) and keeps actions continuous where the env file
discretizes them for Salimans et al.'s MLP (Hopper, Swimmer).

Where this differs from the reference code, and why:

* Top-b selection keeps exactly b directions (ties broken by member order); the reference code
  keeps every direction at or above a percentile, which can be more than b on ties.
* If the 2b returns are all equal, sigma_R is floored at 1e-8: every difference is then zero, so the
  step is zero (the reference code would divide 0 by 0).
* M_0 is the policy's own initialization (a linear policy's rows have norm 0.01), not exactly 0.
* The reference code subtracts a per-step survival bonus ("shift") from training rewards; here that
  is the runtime's ``reward_shift`` (fitness = return - shift * length), set per environment in
  ``conf/algo/ars.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import ESConfig, _c
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable

#: ARS versions: v2 normalizes states (Alg. 2, line 8), v1 does not; ``auto`` follows policy.obs_norm.
VERSIONS: tuple[str, ...] = ("auto", "v1", "v2")

#: The survival bonus the reference code subtracts per step (``code/ars.py``, ``--shift``: "for
#: Hopper-v1, Walker2d-v1, and Ant-v1 use shift = 1", Humanoid's default 5; Swimmer and HalfCheetah 0).
PAPER_REWARD_SHIFT: dict[str, float] = {"hopper": 1.0, "walker2d": 1.0, "ant": 1.0, "humanoid": 5.0}


@dataclass
class ARSConfig(ESConfig):
    """ARS (Mania et al. 2018, Algorithm 2). Not a :class:`GradientESConfig`: the step is the paper's
    plain one, with no optimizer, momentum or fitness shaping to choose."""

    name: str = "ars"
    version: str = _c("auto", choices=VERSIONS)  # auto: v2 if policy.obs_norm else v1
    population_size: int = _c(16, ge=2)  # 2N evaluations: N = 8 directions, both signs
    sigma: float = _c(0.03, gt=0.0)  # nu, the exploration noise
    learning_rate: float = _c(0.02, gt=0.0)  # alpha, the step size
    top_directions: int | None = _c(None, ge=1)  # b; None: all N directions (V1/V2 without -t)
    action_noise_std: float = _c(0.0, ge=0.0)  # ARS perturbs parameters only
    obs_norm_fraction: float = _c(1.0, ge=0.0, le=1.0)  # V2: statistics of every state seen
    # The survival bonus per step by env.name (conf/algo/ars.yaml picks reward_shift from it).
    reward_shift_by_env: dict[str, float] = field(default_factory=lambda: dict(PAPER_REWARD_SHIFT))


class ARS(Strategy):
    """Augmented Random Search (V1/V2 and their top-b forms); hyperparameters from :class:`ARSConfig`.

    Raises:
        ValueError: ``antithetic`` is false (ARS evaluates every direction in both signs).
    """

    def __init__(self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: Any = None) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        if not cfg.antithetic:
            raise ValueError("ARS evaluates every direction in both signs: algo.antithetic must be true")
        self.learning_rate = float(cfg.learning_rate)

    def top_b(self, fitness: np.ndarray) -> np.ndarray:
        """Indices of the b best directions by max(r(+), r(-)), best first, shape (b,) (Alg. 2,
        line 6). ``fitness`` is (m, 2); b is ``top_directions`` capped at m (all m when unset)."""
        m = fitness.shape[0]
        b = m if self.cfg.top_directions is None else min(int(self.cfg.top_directions), m)
        return np.argsort(-fitness.max(axis=1), kind="stable")[:b]

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        if fitness.shape[1] != 2:
            raise ValueError(f"ARS needs (r(+), r(-)) per direction; got fitness of shape {fitness.shape}")
        keep = self.top_b(fitness)
        kept = fitness[keep]  # (b, 2)
        sigma_r = max(float(kept.std()), 1e-8)  # std of the 2b returns used, Alg. 2 line 7
        b = len(keep)
        weights = (kept[:, 0] - kept[:, 1]) / (b * sigma_r)
        direction = self.weighted_noise_sum(weights, population.offsets[keep])
        step = np.float32(self.learning_rate) * direction  # M += alpha/(b sigma_R) sum (r+ - r-) delta
        params = (state.params + step).astype(np.float32)
        metrics = {
            "grad_norm": float(np.linalg.norm(direction)),
            "update_ratio": float(np.linalg.norm(step)) / max(float(np.linalg.norm(state.params)), 1e-12),
            "sigma_r": sigma_r,
            "directions_used": float(b),
        }
        return replace(state, params=params), metrics


def obs_norm_of_version(version: str) -> bool:
    """The ``policy.obs_norm`` that ``algo.version`` implies (``${ars_obs_norm:...}`` in
    conf/algo/ars.yaml): false for v1, true for v2 and auto (the paper's V2 is the default)."""
    return str(version) != "v1"


if not OmegaConf.has_resolver("ars_obs_norm"):
    OmegaConf.register_new_resolver("ars_obs_norm", obs_norm_of_version)


def check_ars(cfg: DictConfig) -> None:
    """ARS's cross-field check of a whole run config (registry ``check``).

    Raises:
        ConfigError: no mirrored pairs; more top directions than directions; a version that
            disagrees with ``policy.obs_norm``; V2 without the statistics of every rollout.
    """
    algo, policy = cfg.algo, cfg.policy
    if not algo.antithetic:
        raise ConfigError("algo=ars evaluates every direction in both signs; allowed: algo.antithetic=true")
    n = int(algo.population_size) // 2
    if algo.top_directions is not None and int(algo.top_directions) > n:
        raise ConfigError(
            f"algo.top_directions={algo.top_directions} exceeds the {n} directions of "
            f"algo.population_size={algo.population_size}; allowed: 1..{n}, or null for all"
        )
    version, obs_norm = str(algo.version), bool(policy.obs_norm)
    v2 = obs_norm if version == "auto" else version == "v2"
    if v2 != obs_norm:
        want, got = str(v2).lower(), str(obs_norm).lower()
        raise ConfigError(
            f"algo.version={version} needs policy.obs_norm={want} (got {got}: set by an override or by "
            f"env={cfg.env.name}'s file); allowed: policy.obs_norm={want}, or algo.version=auto"
        )
    if v2 and float(algo.obs_norm_fraction) != 1.0:
        raise ConfigError(
            f"algo=ars V2 normalizes by the statistics of every state seen; "
            f"algo.obs_norm_fraction={algo.obs_norm_fraction}; allowed: 1.0"
        )


register_algorithm(
    AlgorithmSpec(
        key="ars",
        family="es",
        schema=ARSConfig,
        cls=ARS,
        label="ARS",
        colour="#56B4E9",
        description="ARS, Mania et al. 2018: linear policy, top-b directions, step / std of returns",
        policy_kinds=("linear", "mlp"),
        check=check_ars,
    )
)
