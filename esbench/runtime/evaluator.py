"""The master side of a generation: split members into Dask tasks, gather, re-send when stale."""

from __future__ import annotations

import numpy as np
from distributed import Client

from esbench.runtime.replica import SyncMessage, TrainerState
from esbench.runtime.worker import ChunkResult, RunSpec, evaluate_chunk


def split_members(n: int, n_tasks: int) -> list[list[int]]:
    """Indices 0..n-1 in ``n_tasks`` contiguous chunks (results do not depend on the split)."""
    n_tasks = max(1, min(n, n_tasks))
    return [c.tolist() for c in np.array_split(np.arange(n), n_tasks)]


def evaluate_members(
    client: Client,
    spec: RunSpec,
    msg: SyncMessage,
    chunks: list[list[int]],
    mode: str,
    state: TrainerState,
) -> list[ChunkResult]:
    """Run ``evaluate_chunk`` over ``chunks`` on the cluster; results in chunk order.

    Workers that cannot reach ``msg.generation`` by replay (new, restarted, too far behind)
    answer stale; those chunks are sent again with a snapshot of ``state``, scattered once.
    A worker lost mid-task has its task recomputed elsewhere by Dask; since every random stream
    is derived from (seed, generation, member), the recomputed result is the same.
    """
    futures = [client.submit(evaluate_chunk, spec, msg, c, mode, pure=False) for c in chunks]
    results: list[ChunkResult] = client.gather(futures)
    stale = [i for i, r in enumerate(results) if r.stale]
    if stale:
        snapshot = client.scatter(state, hash=False)
        retry = {
            i: client.submit(evaluate_chunk, spec, msg, chunks[i], mode, snapshot, pure=False) for i in stale
        }
        for i, fut in retry.items():
            results[i] = fut.result()
            if results[i].stale:
                raise RuntimeError(f"a worker could not load the generation-{msg.generation} snapshot")
    return results
