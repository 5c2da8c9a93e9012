"""The master side of a generation: split members into Dask tasks, gather, re-send when stale."""

from __future__ import annotations

import logging

import numpy as np
from distributed import CancelledError, Client, Future, KilledWorker

from esbench.runtime.replica import SyncMessage, TrainerState
from esbench.runtime.wire import WireStats, payload_bytes
from esbench.runtime.worker import ChunkResult, RunSpec, evaluate_chunk

log = logging.getLogger(__name__)

#: Rounds of snapshot re-sends in one call before giving up: a round fails only when the worker
#: holding the scattered snapshot dies before every stale task has fetched it.
SNAPSHOT_ROUNDS = 3


#: Bytes of protocol header, frame opcode and stop that every separate pickle carries.
_PICKLE_FRAMING = 12


def split_members(n: int, n_tasks: int) -> list[list[int]]:
    """Indices 0..n-1 in ``n_tasks`` contiguous chunks (results do not depend on the split)."""
    n_tasks = max(1, min(n, n_tasks))
    return [c.tolist() for c in np.array_split(np.arange(n), n_tasks)]


class MemberEvaluator:
    """Runs ``evaluate_chunk`` over chunks of members on the cluster, one call per generation.

    Each call keeps its futures until the next call, which releases them just before it submits.
    Released at once, at the end of a call, they reach the scheduler on their own, and the client
    holds its next message (the next generation's tasks) for its 10 ms batching interval: about
    7 ms lost per generation here. Released just before the submission, both go in one batch.

    Chunk i may run on two workers, the i-th and the next of those connected (in address order,
    round robin), whichever Dask expects to start it sooner, as a loose restriction (any other
    worker takes it if both are gone, and Dask may still move it to an idle one). Left unrestricted,
    a generation's chunks could all land on one worker while another idled: once their task group
    grows past twice the cluster's threads (a stale worker's re-sent chunk, an evaluation's, results
    still held), Dask queues them as "root-ish" and hands each to the worker with the fewest tasks,
    counting the job itself (seceded from its worker, but still a task there) against the worker it
    waits on; a Hopper run alone on 2 workers fell from 5.8k to 3.2k timesteps/s. A restricted task
    is never root-ish, and the choice of two keeps placement load-aware (a worker busy with another
    job's long task is passed over) at a constant cost per task however many workers there are.
    Where a chunk runs changes no number.

    :attr:`wire` counts what the calls send and receive (:mod:`esbench.runtime.wire`); the trainer
    takes the counts once per generation.
    """

    def __init__(self, client: Client, spec: RunSpec) -> None:
        self.client = client
        self.spec = spec
        self.held: list[Future] = []  # the last call's futures, kept until the next call
        self.wire = WireStats()
        self._fixed_bytes = payload_bytes((evaluate_chunk, spec))  # the same in every task

    def task_bytes(self, msg_bytes: int, chunk: list[int], mode: str) -> int:
        """Payload of one task: function and spec, the message (``msg_bytes``), members, mode.

        The three parts are sized apart (the message once for all tasks) and each separate pickle
        carries its own 12 bytes of header, frame and stop, which the task's one pickle has once.
        """
        return self._fixed_bytes + msg_bytes + payload_bytes((chunk, mode)) - 2 * _PICKLE_FRAMING

    def __call__(
        self, msg: SyncMessage, chunks: list[list[int]], mode: str, state: TrainerState, stage: int = 0
    ) -> list[ChunkResult]:
        """The chunks' results in chunk order, played on stage ``stage``'s environment.

        Workers that cannot reach ``msg.generation`` by replay (new, restarted, or further behind
        than the records the message carries: ``algo.sync_history``) answer stale; those chunks are
        sent again with a snapshot of ``state``, scattered once, and counted in :attr:`wire`
        (``snapshots_sent``). A worker lost mid-task has its task recomputed elsewhere by Dask;
        since every random stream is derived from (seed, generation, member), the recomputed result
        is the same. A snapshot lost with its worker before the stale tasks fetched it is scattered
        again.
        """
        client, spec = self.client, self.spec
        workers = sorted(client.nthreads())  # the workers connected now: they may come and go
        self.held = []  # the previous call's results: released in the same batch as the submission
        n = len(workers)
        place = [sorted({workers[i % n], workers[(i + 1) % n]}) if n else None for i in range(len(chunks))]
        futures = [
            client.submit(
                evaluate_chunk,
                spec,
                msg,
                c,
                mode,
                stage=stage,
                pure=False,
                workers=w,
                allow_other_workers=True,
            )
            for c, w in zip(chunks, place, strict=True)
        ]
        self.held = futures
        msg_bytes = payload_bytes(msg)  # counted while the workers compute
        self.wire.tasks += len(chunks)
        self.wire.bytes_to_workers += sum(self.task_bytes(msg_bytes, c, mode) for c in chunks)
        results: list[ChunkResult] = client.gather(futures)
        self.wire.bytes_from_workers += sum(payload_bytes(r) for r in results)
        stale = [i for i, r in enumerate(results) if r.stale]
        for attempt in range(1, SNAPSHOT_ROUNDS + 1):
            if not stale:
                break
            snapshot = client.scatter(state, hash=False)
            per_task = payload_bytes(state) + payload_bytes(snapshot.key)
            log.info(
                "generation %d: %d task(s) on stale workers, re-sent with a %.1f kB snapshot",
                msg.generation, len(stale), per_task / 1e3,
            )  # fmt: skip
            retry = {
                i: client.submit(
                    evaluate_chunk, spec, msg, chunks[i], mode, snapshot, stage=stage, pure=False
                )
                for i in stale
            }
            self.wire.tasks += len(retry)
            self.wire.snapshots_sent += len(retry)
            self.wire.bytes_to_workers += sum(
                per_task + self.task_bytes(msg_bytes, chunks[i], mode) for i in retry
            )
            try:
                got = dict(zip(retry, client.gather(list(retry.values())), strict=True))
            except (CancelledError, KilledWorker):
                if attempt == SNAPSHOT_ROUNDS:
                    raise
                log.warning(
                    "generation %d: the snapshot was lost with its worker; sending it again", msg.generation
                )
                continue
            for i, r in got.items():
                if r.stale:
                    raise RuntimeError(f"a worker could not load the generation-{msg.generation} snapshot")
                self.wire.bytes_from_workers += payload_bytes(r)
                results[i] = r
            stale = []
        return results
