"""Bytes on the wire: what a generation sends to and receives from the workers, counted.

DESIGN.md promise 2 says ES sends seeds and scalars, not parameters. :class:`WireStats` makes that a
measurement: :class:`esbench.runtime.evaluator.MemberEvaluator` adds, per task, the serialized size
of what the task carries (the function reference, the :class:`~esbench.runtime.worker.RunSpec`, the
:class:`~esbench.runtime.replica.SyncMessage`, the member indices, and a full
:class:`~esbench.runtime.replica.TrainerState` snapshot when a worker was stale) and of the
:class:`~esbench.runtime.worker.ChunkResult` it returns. The trainer logs one generation's totals
in ``metrics.csv`` (``bytes_to_workers``, ``bytes_from_workers``, ``snapshots_sent``).

What is counted is the payload as Dask serializes it (:func:`distributed.protocol.pickle.dumps`,
pickle protocol 5 with NumPy buffers out of band), not Dask's own framing, task keys and
bookkeeping messages (a few hundred bytes per task, independent of the model). Counting costs a
pickle of the message once per generation (while the workers compute) and one of each small result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distributed.protocol import pickle as dask_pickle


def payload_bytes(obj: Any) -> int:
    """Serialized size of ``obj`` as Dask ships it: pickle protocol 5, out-of-band buffers added.

    Out-of-band buffers (the raw bytes of NumPy arrays) are not copied, so sizing a large snapshot
    costs about as little as sizing a small message.
    """
    buffers: list[Any] = []
    header = dask_pickle.dumps(obj, buffer_callback=buffers.append)
    return len(header) + sum(memoryview(b).nbytes for b in buffers)


@dataclass
class WireStats:
    """What crossed the wire between the master and the workers since the last :meth:`take`.

    Attributes:
        bytes_to_workers: Task payloads sent, snapshots included (one per stale task).
        bytes_from_workers: Results received.
        snapshots_sent: Tasks re-sent with a full state because their worker could not reach the
            generation by replay (new, restarted or lagging worker): resyncs, counted.
        tasks: Tasks submitted, re-sent ones included.
    """

    bytes_to_workers: int = 0
    bytes_from_workers: int = 0
    snapshots_sent: int = 0
    tasks: int = 0

    def take(self) -> WireStats:
        """A copy of the counts so far, and reset them to zero (one generation's worth)."""
        out = WireStats(self.bytes_to_workers, self.bytes_from_workers, self.snapshots_sent, self.tasks)
        self.bytes_to_workers = self.bytes_from_workers = self.snapshots_sent = self.tasks = 0
        return out

    def row(self) -> dict[str, int]:
        """The ``metrics.csv`` columns these counts fill."""
        return {
            "bytes_to_workers": self.bytes_to_workers,
            "bytes_from_workers": self.bytes_from_workers,
            "snapshots_sent": self.snapshots_sent,
        }
