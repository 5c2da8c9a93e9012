"""The policy interface ES and the evaluator program against.

A policy is a fixed architecture whose weights live in one flat float32 vector (the strategy's
search space). ES workers call :meth:`Policy.set_params` with a perturbed vector, then
:meth:`Policy.act` once per environment step. Policies hold no randomness of their own: action
noise (training only) is drawn by the caller from a stream derived from (seed, generation, member).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from esbench.measures.distribution import ActionDist
from esbench.utils.layout import ParamLayout, flat_layout


class Policy(ABC):
    """A deterministic policy over a flat float32 parameter vector."""

    @property
    @abstractmethod
    def num_params(self) -> int:
        """Length of the flat parameter vector."""

    @abstractmethod
    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """A fresh initial parameter vector, shape (num_params,), float32, drawn from ``rng``."""

    @abstractmethod
    def set_params(self, flat: np.ndarray) -> None:
        """Load weights from a flat vector of shape (num_params,). Must not keep a reference that
        the caller may later mutate in place (copy, or view into the policy's own buffer)."""

    @abstractmethod
    def act(self, obs: Any) -> Any:
        """The action for one observation, in the environment's action space."""

    def action_distribution(self, obs: np.ndarray) -> ActionDist:
        """The policy's action distributions on a batch of raw observations, shape (n, *obs_shape)
        (normalized inside, as :meth:`act` does): categorical from the logits its argmax acts on,
        or, for a continuous action, a Gaussian of std
        :data:`~esbench.measures.distribution.ACTION_STD` around it (the KL of issue #14)."""
        raise NotImplementedError(f"{type(self).__name__} has no action distribution")

    def param_layout(self) -> ParamLayout:
        """How the flat vector is laid out (weight matrices and vectors); one vector by default."""
        return flat_layout(self.num_params)

    # Observation normalization (MuJoCo). Policies without it keep these as no-ops.
    @property
    def uses_obs_norm(self) -> bool:
        """Whether this policy normalizes observations with running statistics."""
        return False

    def set_obs_stats(self, mean: np.ndarray, std: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Set the normalization statistics (shape (obs_dim,) each)."""
