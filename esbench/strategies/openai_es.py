"""OpenAI-ES: Salimans, Ho, Chen, Sidor, Sutskever (2017), arXiv:1703.03864.

Algorithm 2 (parallel ES with a shared noise table) with the tricks of Sec. 2.2: antithetic
(mirrored) sampling, centered-rank fitness shaping over all 2n returns, weight decay, and Adam on
the estimated gradient. The update follows the paper's public reference code:
``g = sum_i (r_i(+) - r_i(-)) eps_i / (2n)`` with r the shaped returns, then the optimizer steps on
``-g + l2 * theta`` (sigma is folded into the step size).
"""

from __future__ import annotations

import numpy as np

from esbench.strategies.base import ESState, Strategy
from esbench.strategies.optimizers import OptState, adam_step, sgd_step
from esbench.strategies.shaping import shape_fitness


class OpenAIES(Strategy):
    """The paper's ES; hyperparameters from :class:`esbench.config.schema.OpenAIESConfig`."""

    def _update(
        self, state: ESState, offsets: np.ndarray, fitness: np.ndarray
    ) -> tuple[np.ndarray, OptState, dict[str, float]]:
        shaped = shape_fitness(fitness, self.cfg.fitness_shaping)  # over all 2n returns
        weights = shaped[:, 0] - shaped[:, 1] if shaped.shape[1] == 2 else shaped[:, 0]
        g = self.weighted_noise_sum(weights, offsets) / np.float32(fitness.size)
        loss_grad = -g + np.float32(self.cfg.l2_coeff) * state.params
        if self.cfg.optimizer == "adam":
            opt, step = adam_step(
                state.opt, loss_grad, self.cfg.learning_rate, self.cfg.beta1, self.cfg.beta2
            )
        else:
            opt, step = sgd_step(state.opt, loss_grad, self.cfg.learning_rate, self.cfg.momentum)
        params = (state.params + step).astype(np.float32)
        pnorm = float(np.linalg.norm(state.params))
        return (
            params,
            opt,
            {
                "grad_norm": float(np.linalg.norm(g)),
                "update_ratio": float(np.linalg.norm(step)) / max(pnorm, 1e-12),
            },
        )
