"""Every random stream is derived from (run seed, generation, member index, purpose).

DESIGN.md promise 1: never from a worker's identity or a global RNG, so a run is the same whatever
the number of workers, the order tasks finish in, or a retry after a lost worker.
"""

from __future__ import annotations

import hashlib

import numpy as np

# Purposes: distinct streams for distinct uses of the same (seed, generation, member).
NOISE_OFFSETS = 1
ENV_RESET = 2
ACTION_NOISE = 3
OBS_STATS = 4
INIT_PARAMS = 5
VBN_REFERENCE = 6  # the Atari CNN's virtual-batch-norm reference batch (one per run)
# Evaluation actions: RL's sampled / epsilon-greedy (seed, 7, timestep, episode), ES's action noise
# under eval.also_stochastic (seed, 7, generation, episode).
EVAL_ACTIONS = 7


def generator(seed: int, *keys: int) -> np.random.Generator:
    """A PCG64 generator for the stream named by ``seed`` and ``keys`` (all non-negative ints)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(int(k) for k in keys)]))


def derive_seed(seed: int, *keys: int) -> int:
    """A 31-bit integer seed (for ``env.reset(seed=...)``) from ``seed`` and ``keys``."""
    return int(np.random.SeedSequence([int(seed), *(int(k) for k in keys)]).generate_state(1)[0] >> 1)


def sha256_array(x: np.ndarray) -> str:
    """Hex sha256 of an array's bytes in C order (used for ``params_sha256`` and sync digests)."""
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()
