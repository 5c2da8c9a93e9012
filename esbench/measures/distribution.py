"""A batch of action distributions, and the KL divergence between two of them.

Used to measure how far a policy moved on a fixed set of states (issue #14: "KL drift on
prior-task inputs", Abdi, Gupta et al. 2026, arXiv:2601.20861): ``KL(π_snapshot || π_now)``
averaged over states the snapshot policy visited. Both families describe their policy the same
way, so one formula serves ES and the RL baselines:

* a **categorical** distribution per state and action dimension, from logits: discrete ES/Atari
  policies (the argmax of the logits is the action), ES's ``action_bins`` (one categorical per
  action dimension, independent: the KL is summed over dimensions), SB3's categorical policies
  (A2C, PPO, TRPO) and, as a stated modelling choice, DQN (its Q-values as logits: a Boltzmann
  policy at temperature 1);
* a **diagonal Gaussian** per state: SB3's continuous policies (mean and log std), and a
  deterministic continuous ES policy as a Gaussian of std :data:`ACTION_STD` around its action (a
  modelling choice, not a property of the policy: the ES action noise, so a KL of 1 is an action
  change of about 1.4 σ).

Formulas (computed in float64; Bishop 2006, *Pattern Recognition and Machine Learning*, Eq. 1.113
for the discrete KL; the Gaussian closed form, e.g. Kullback 1959):

* categorical: ``KL(p || q) = sum_a p(a) (log p(a) - log q(a))`` with ``p = softmax(l_p)``;
* diagonal Gaussian: ``KL(p || q) = sum_d [log σ_q - log σ_p + (σ_p² + (μ_p - μ_q)²) / (2 σ_q²) - 1/2]``,
  which for ``σ_p = σ_q = σ`` is ``||μ_p - μ_q||² / (2σ²)``.

These equal ``torch.distributions.kl_divergence`` of SB3's ``Categorical`` / ``Normal``
distributions (summed over action dimensions, as SB3 sums log-probabilities), and are exactly 0
for two identical arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Std of the Gaussian put around a deterministic continuous action for the KL (the ES action noise).
ACTION_STD = 0.01

CATEGORICAL = "categorical"
GAUSSIAN = "gaussian"


@dataclass(frozen=True)
class ActionDist:
    """Action distributions of one policy on ``n`` states.

    Attributes:
        kind: :data:`CATEGORICAL` or :data:`GAUSSIAN`.
        loc: Categorical: logits, shape (n, n_actions) or (n, act_dim, n_bins) (one categorical
            per action dimension); Gaussian: means, shape (n, act_dim).
        log_std: Gaussian only: log stds, broadcastable to ``loc`` (SB3's are state-independent,
            shape (act_dim,)); None for a categorical.
    """

    kind: str
    loc: np.ndarray
    log_std: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in (CATEGORICAL, GAUSSIAN):
            raise ValueError(f"kind must be {CATEGORICAL!r} or {GAUSSIAN!r}, got {self.kind!r}")
        if (self.kind == GAUSSIAN) != (self.log_std is not None):
            raise ValueError("a Gaussian needs log_std, a categorical has none")

    @property
    def n_states(self) -> int:
        """The number of states (the first axis of ``loc``)."""
        return int(self.loc.shape[0])


def categorical(logits: np.ndarray) -> ActionDist:
    """A categorical per state from ``logits`` (shape (n, n_actions) or (n, act_dim, n_bins))."""
    return ActionDist(CATEGORICAL, np.asarray(logits))


def gaussian(mean: np.ndarray, log_std: np.ndarray) -> ActionDist:
    """A diagonal Gaussian per state: ``mean`` (n, act_dim), ``log_std`` broadcastable to it."""
    return ActionDist(GAUSSIAN, np.asarray(mean), np.asarray(log_std))


def deterministic_gaussian(actions: np.ndarray, sigma: float = ACTION_STD) -> ActionDist:
    """A deterministic continuous policy's actions (n, act_dim) as Gaussians of std ``sigma``."""
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    a = np.asarray(actions)
    return gaussian(a.reshape(len(a), -1), np.full(1, np.log(sigma)))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def kl_categorical(logits_p: np.ndarray, logits_q: np.ndarray) -> np.ndarray:
    """``KL(softmax(l_p) || softmax(l_q)) = sum_a π_p(a) (log π_p(a) - log π_q(a))`` per state.

    Args:
        logits_p: Shape (n_states, n_actions), or (n_states, act_dim, n_bins) for independent
            categoricals per action dimension (their KLs summed); shifting a row by a constant
            changes nothing.
        logits_q: Same shape, the other policy on the same states.

    Returns:
        Per-state KL, shape (n_states,).
    """
    lp = _log_softmax(np.asarray(logits_p, dtype=np.float64))
    lq = _log_softmax(np.asarray(logits_q, dtype=np.float64))
    per = np.sum(np.exp(lp) * (lp - lq), axis=-1)
    return per.reshape(len(lp), -1).sum(axis=1)


def kl_diag_gaussian(
    mean_p: np.ndarray, log_std_p: np.ndarray, mean_q: np.ndarray, log_std_q: np.ndarray
) -> np.ndarray:
    """Analytic KL between diagonal Gaussians per state.

    ``KL(p || q) = sum_d [log σ_q - log σ_p + (σ_p² + (μ_p - μ_q)²) / (2 σ_q²) - 1/2]``.

    Args:
        mean_p: Shape (n_states, act_dim).
        log_std_p: Shape (n_states, act_dim) or (act_dim,) (SB3's state-independent log_std).
        mean_q: Shape (n_states, act_dim).
        log_std_q: Like ``log_std_p``.

    Returns:
        Per-state KL, shape (n_states,).
    """
    mp = np.asarray(mean_p, dtype=np.float64)
    mq = np.asarray(mean_q, dtype=np.float64)
    lsp = np.broadcast_to(np.asarray(log_std_p, dtype=np.float64), mp.shape)
    lsq = np.broadcast_to(np.asarray(log_std_q, dtype=np.float64), mq.shape)
    var_p, var_q = np.exp(2 * lsp), np.exp(2 * lsq)
    terms = lsq - lsp + (var_p + (mp - mq) ** 2) / (2 * var_q) - 0.5
    return terms.reshape(len(mp), -1).sum(axis=1)


def kl_deterministic_gaussian(
    actions_p: np.ndarray, actions_q: np.ndarray, sigma: float = ACTION_STD
) -> np.ndarray:
    """KL between Gaussians of one std σ around two deterministic policies' actions.

    ``KL(N(a_p, σ²I) || N(a_q, σ²I)) = ||a_p - a_q||² / (2σ²)``, summed over action dimensions
    (symmetric in p and q).

    Args:
        actions_p: Shape (n_states, act_dim) (or (n_states,) for one dimension).
        actions_q: Same shape, the other policy on the same states.
        sigma: The std, > 0.

    Returns:
        Per-state KL, shape (n_states,).
    """
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    a = np.asarray(actions_p, dtype=np.float64)
    b = np.asarray(actions_q, dtype=np.float64)
    diff = (a - b).reshape(len(a), -1)
    return np.sum(diff**2, axis=1) / (2.0 * sigma**2)


def kl_divergence(p: ActionDist, q: ActionDist) -> np.ndarray:
    """``KL(p || q)`` per state, shape (n_states,), for two distributions of one kind and shape.

    Raises:
        ValueError: Different kinds, or ``loc`` shapes that differ.
    """
    if p.kind != q.kind or p.loc.shape != q.loc.shape:
        raise ValueError(
            f"KL between a {p.kind} {p.loc.shape} and a {q.kind} {q.loc.shape}: one kind and shape needed"
        )
    if p.kind == CATEGORICAL:
        return kl_categorical(p.loc, q.loc)
    assert p.log_std is not None and q.log_std is not None
    return kl_diag_gaussian(p.loc, p.log_std, q.loc, q.log_std)


__all__ = [
    "ACTION_STD",
    "CATEGORICAL",
    "GAUSSIAN",
    "ActionDist",
    "categorical",
    "deterministic_gaussian",
    "gaussian",
    "kl_categorical",
    "kl_deterministic_gaussian",
    "kl_diag_gaussian",
    "kl_divergence",
]
