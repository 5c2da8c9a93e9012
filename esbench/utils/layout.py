"""How a flat parameter vector is laid out: the contract between policies and strategies.

A policy keeps its weights in one flat float32 vector; strategies search over that vector. Most
strategies need nothing more, but some perturb per layer (EGGROLL's low-rank matrix perturbations),
so a policy describes its vector as :class:`Block` s and a strategy may read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Block:
    """One contiguous block of the flat vector: a weight matrix (out, in) or a vector (n,)."""

    start: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of parameters in the block."""
        return int(np.prod(self.shape))

    @property
    def stop(self) -> int:
        """One past the block's last index."""
        return self.start + self.size


ParamLayout = tuple[Block, ...]
"""The blocks of a flat vector, in order, covering it exactly."""


def flat_layout(dim: int) -> ParamLayout:
    """The structureless layout: one vector of ``dim`` parameters."""
    return (Block(0, (int(dim),)),)


def check_layout(layout: ParamLayout, dim: int) -> None:
    """Raise ValueError unless ``layout``'s blocks tile ``[0, dim)`` in order."""
    pos = 0
    for b in layout:
        if b.start != pos:
            raise ValueError(f"parameter layout block at {b.start}, expected {pos}")
        pos = b.stop
    if pos != dim:
        raise ValueError(f"parameter layout covers {pos} of {dim} parameters")
