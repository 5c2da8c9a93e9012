"""First-order optimizers as pure functions over frozen states (the ES paper uses Adam).

An optimizer *minimizes*: ``step`` returns the new state and the parameter increment for a
gradient of the loss. OpenAI-ES passes ``-g + l2 * theta`` (the reference implementation's sign).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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


def adam_step(
    state: OptState, grad: np.ndarray, lr: float, beta1: float, beta2: float, eps: float = 1e-8
) -> tuple[OptState, np.ndarray]:
    """Adam (Kingma & Ba 2015) with bias correction folded into the step size, as in the paper's code."""
    t = state.t + 1
    a = lr * np.sqrt(1.0 - beta2**t) / (1.0 - beta1**t)
    m = beta1 * state.m + (1.0 - beta1) * grad
    v = beta2 * state.v + (1.0 - beta2) * (grad * grad)
    step = (-a * m / (np.sqrt(v) + eps)).astype(np.float32)
    return replace(state, m=m.astype(np.float32), v=v.astype(np.float32), t=t), step


def sgd_step(state: OptState, grad: np.ndarray, lr: float, momentum: float) -> tuple[OptState, np.ndarray]:
    """SGD with momentum (the reference code's ``SGD``): v <- mu v + (1 - mu) g; step = -lr v."""
    v = (momentum * state.v + (1.0 - momentum) * grad).astype(np.float32)
    return replace(state, v=v, t=state.t + 1), (-lr * v).astype(np.float32)
