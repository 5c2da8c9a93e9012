"""First-order optimizers over frozen states, chosen once when a strategy is built.

An optimizer *minimizes*: :meth:`Optimizer.step` takes the gradient of a loss and returns the new
state and the parameter increment. Gradient-estimating ES variants pass ``-g + l2 * theta``, with
``g`` the estimated gradient of the expected return (the reference implementation's sign).
The state is a frozen dataclass of arrays, so it is checkpointable and replayable as it is.

* Adam (Kingma & Ba 2015), with the bias correction folded into the step size as in the
  reference code of Salimans et al. (2017).
* SGD with momentum, the reference code's ``SGD``: ``v <- mu v + (1 - mu) g``.
* ClipUp (Toklu, Liskowski, Srivastava 2020, "ClipUp: a simple and powerful optimizer for
  distribution-based policy evolution", Algorithm 1): a normalized gradient step added to a
  momentum velocity whose norm is capped at ``max_speed``; PGPE's default here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class OptState:
    """Moments and step count. ``m``/``v`` have the parameters' shape (dim,), float32."""

    m: np.ndarray
    v: np.ndarray
    t: int = 0


def init_opt_state(dim: int) -> OptState:
    """Zero moments for ``dim`` parameters."""
    return OptState(m=np.zeros(dim, np.float32), v=np.zeros(dim, np.float32), t=0)


class Optimizer(ABC):
    """A first-order optimizer: pure ``step(state, grad) -> (state, increment)``."""

    def init(self, dim: int) -> OptState:
        """The state before the first step."""
        return init_opt_state(dim)

    @abstractmethod
    def step(self, state: OptState, grad: np.ndarray) -> tuple[OptState, np.ndarray]:
        """The next state and the parameter increment (float32, shape of ``grad``)."""


class Adam(Optimizer):
    """Adam with the bias correction in the step size (the ES paper's reference code)."""

    def __init__(self, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.lr, self.beta1, self.beta2, self.eps = float(lr), float(beta1), float(beta2), float(eps)

    def step(self, state: OptState, grad: np.ndarray) -> tuple[OptState, np.ndarray]:
        t = state.t + 1
        a = self.lr * np.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        m = self.beta1 * state.m + (1.0 - self.beta1) * grad
        v = self.beta2 * state.v + (1.0 - self.beta2) * (grad * grad)
        step = (-a * m / (np.sqrt(v) + self.eps)).astype(np.float32)
        return replace(state, m=m.astype(np.float32), v=v.astype(np.float32), t=t), step


class SGD(Optimizer):
    """SGD with momentum: ``v <- mu v + (1 - mu) g``; increment ``-lr v`` (``mu = 0``: plain SGD)."""

    def __init__(self, lr: float, momentum: float = 0.0) -> None:
        self.lr, self.momentum = float(lr), float(momentum)

    def step(self, state: OptState, grad: np.ndarray) -> tuple[OptState, np.ndarray]:
        v = (self.momentum * state.v + (1.0 - self.momentum) * grad).astype(np.float32)
        return replace(state, v=v, t=state.t + 1), (-self.lr * v).astype(np.float32)


class ClipUp(Optimizer):
    """ClipUp (Toklu et al. 2020, Alg. 1): ``v <- mu v - lr g/|g|``, then ``|v|`` capped at
    ``max_speed``; the increment is ``v``. The paper's rule of thumb: ``max_speed = 2 lr``."""

    def __init__(self, lr: float, momentum: float = 0.9, max_speed: float | None = None) -> None:
        self.lr, self.momentum = float(lr), float(momentum)
        self.max_speed = float(max_speed) if max_speed is not None else 2.0 * self.lr

    def step(self, state: OptState, grad: np.ndarray) -> tuple[OptState, np.ndarray]:
        gnorm = float(np.linalg.norm(grad))
        direction = grad / gnorm if gnorm > 0 else np.zeros_like(grad)
        v = self.momentum * state.v - self.lr * direction  # Eq. (ClipUp velocity)
        vnorm = float(np.linalg.norm(v))
        if vnorm > self.max_speed:
            v = v * (self.max_speed / vnorm)
        v = v.astype(np.float32)
        return replace(state, v=v, t=state.t + 1), v.copy()


OPTIMIZERS: tuple[str, ...] = ("adam", "sgd", "clipup")


def make_optimizer(cfg: Any) -> Optimizer:
    """The optimizer a :class:`~esbench.config.schema.GradientESConfig` names."""
    name = str(cfg.optimizer)
    if name == "adam":
        return Adam(cfg.learning_rate, cfg.beta1, cfg.beta2)
    if name == "sgd":
        return SGD(cfg.learning_rate, cfg.momentum)
    if name == "clipup":
        return ClipUp(cfg.learning_rate, cfg.momentum, cfg.get("max_speed"))
    raise ValueError(f"optimizer={name!r}; allowed: {', '.join(OPTIMIZERS)}")


def adam_step(
    state: OptState, grad: np.ndarray, lr: float, beta1: float, beta2: float, eps: float = 1e-8
) -> tuple[OptState, np.ndarray]:
    """One :class:`Adam` step (functional form)."""
    return Adam(lr, beta1, beta2, eps).step(state, grad)


def sgd_step(state: OptState, grad: np.ndarray, lr: float, momentum: float) -> tuple[OptState, np.ndarray]:
    """One :class:`SGD` step (functional form)."""
    return SGD(lr, momentum).step(state, grad)
