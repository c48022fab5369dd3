"""Batch behaviors: a vertex class that handles its stream messages as columns.

A :class:`BatchVertex` subclass implements :meth:`BatchVertex.on_updates` instead of
``on_message``: it gets the messages a shard runs for its vertices as arrays (one row per
message, in arrival order) and returns, as arrays, each message's vertex state *after*
that message. The shard logs one entry per message, exactly as for ``on_message``: the
entry's clock, time and state change, so time travel, snapshots at any T, recovery and
exactly-once ingest keep their guarantees, and a vertex's state at any past time is the
state after its last message up to then.

When to use which:

* ``on_updates`` when a message only changes its vertex's own state (counters, sums,
  running features, the last value of a field): the per-message Python of the framework
  (a context, a state copy, a diff per message) is replaced by one call per batch, and
  the user's code runs as numpy operations over all messages of the batch.
* ``on_message`` when a message sends messages, changes edges, spawns or deletes
  vertices, or when each message needs the state left by the one before it in a way
  arrays cannot express.

Guarantees: a batch holds only messages to vertices that exist already (a message that
creates its vertex runs ``on_create`` and then ``on_updates`` on a batch of its own
message); ``state`` is each vertex's state before its first message of the batch; the
rows of one vertex are in the order its messages arrived. If ``on_updates`` raises or
returns something malformed for a batch, the shard runs the batch again one message at
a time, so the message that fails is recorded as failed (applying nothing) and the
others apply -- the same outcome as ``on_message``. Like every hook, ``on_updates`` must
be deterministic.

>>> import numpy as np
>>> class Account(BatchVertex):
...     def on_updates(self, batch):
...         amount = batch.column("amount", 0.0)
...         return {"balance": batch.running_sum(amount, batch.state_column("balance", 0.0))}
>>> Account().on_updates(MessageBatch(["a", "b", "a"], [1.0, 2.0, 3.0], [1, 1, 2],
...     [{"amount": 5}, {"amount": 7}, {"amount": -2}], [{"balance": 10.0}, {}]))
{'balance': array([15.,  7., 13.])}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from vertex.annotations import mark_module_api
from vertex.columns import struct_dicts
from vertex.model import Context, Vertex
from vertex.records import VertexId

__all__ = ["BatchVertex", "MessageBatch", "Payloads", "batch_rows"]


class Payloads(Sequence[Mapping[str, Any]]):
    """Message payloads held as a struct column (``None``: ``n`` empty payloads), read
    as a sequence of dicts -- built on first access, once -- and, by
    :meth:`MessageBatch.column`, a field at a time as an array without any dict.

    >>> p = Payloads(pa.array([{"amount": 5}, {"amount": 7}]), 2)
    >>> p[1], p.column("amount")
    ({'amount': 7}, array([5, 7]))
    """

    __slots__ = ("props", "_n", "_dicts")

    def __init__(self, props: pa.StructArray | None, n: int) -> None:
        self.props = props
        self._n = n
        self._dicts: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        dicts = self._dicts
        if dicts is None:
            props = self.props
            dicts = [{} for _ in range(self._n)] if props is None else struct_dicts(props)
            self._dicts = dicts
        return dicts[i]

    def take(self, rows: Sequence[int]) -> Payloads:
        """The payloads at ``rows``, in that order."""
        props = None if self.props is None else self.props.take(pa.array(rows, pa.int64()))
        return Payloads(props, len(rows))

    def column(self, field: str, dtype: Any = None) -> npt.NDArray[Any] | None:
        """``field`` of every payload as an array, straight from its column, when that
        is exactly what a list of the values would give: a numeric or bool field that
        every payload has (else ``None``)."""
        props = self.props
        if props is None or props.null_count:
            return None
        index = props.type.get_field_index(field)
        if index < 0:
            return None
        values = props.field(index)
        kind = values.type
        if values.null_count or not (
            pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
        ):
            return None
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=dtype)


class MessageBatch:
    """The messages of one batch, for :meth:`BatchVertex.on_updates`.

    Per message (``len(batch)`` rows, arrival order): ``vertex`` (its vertex id),
    ``index`` (the row of its vertex in ``vertices`` and ``states``), ``time`` (the
    execution's event time: the max of the vertex's time and the message's), ``clock``
    (the vertex's execution count after this message) and ``messages`` (the payloads).
    Per vertex (first appearance order): ``vertices`` and ``states`` (its state before
    the batch, read-only by contract). :meth:`column`, :meth:`state_column` and
    :meth:`running_sum` turn them into numpy arrays.
    """

    __slots__ = ("vertex", "index", "time", "clock", "messages", "vertices", "states")

    def __init__(
        self,
        vertex: Sequence[VertexId],
        time: Sequence[float] | npt.NDArray[np.float64],
        clock: Sequence[int] | npt.NDArray[np.int64],
        messages: Sequence[Mapping[str, Any]],
        states: Sequence[Mapping[str, Any]],
    ) -> None:
        self.vertex = list(vertex)
        rows: dict[VertexId, int] = {}
        index = [rows.setdefault(v, len(rows)) for v in self.vertex]
        self.index: npt.NDArray[np.int64] = np.asarray(index, dtype=np.int64)
        self.vertices: list[VertexId] = list(rows)
        self.time: npt.NDArray[np.float64] = np.asarray(time, dtype=np.float64)
        self.clock: npt.NDArray[np.int64] = np.asarray(clock, dtype=np.int64)
        self.messages = messages
        self.states = states
        if len(states) != len(rows):
            raise ValueError(f"{len(states)} states for {len(rows)} vertices")

    def __len__(self) -> int:
        return len(self.vertex)

    def column(self, field: str, default: Any = None, dtype: Any = None) -> npt.NDArray[Any]:
        """The payloads' ``field`` as an array, one value per message (``default`` where a
        payload has none)."""
        messages = self.messages
        if isinstance(messages, Payloads):
            values = messages.column(field, dtype)
            if values is not None:
                return values
        return np.asarray([m.get(field, default) for m in messages], dtype=dtype)

    def state_column(self, field: str, default: Any = None, dtype: Any = None) -> npt.NDArray[Any]:
        """The states' ``field`` before the batch, one value per *vertex* (``default``
        where a state has none); index it with :attr:`index` for one per message."""
        return np.asarray([s.get(field, default) for s in self.states], dtype=dtype)

    def running_sum(
        self, values: npt.ArrayLike, start: npt.ArrayLike | None = None
    ) -> npt.NDArray[Any]:
        """Per message, the sum of ``values`` over its vertex's messages up to and
        including it, plus its vertex's ``start`` (one value per vertex; default 0)."""
        values = np.asarray(values)
        if values.shape != (len(self),):
            raise ValueError(f"running_sum needs one value per message ({len(self)})")
        order = np.argsort(self.index, kind="stable")
        sorted_values = values[order]
        sums = np.cumsum(sorted_values)
        groups = self.index[order]
        first = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        before = np.r_[0, sums[first[1:] - 1]] if len(first) else np.empty(0)
        counts = np.diff(np.r_[first, len(groups)])
        running = np.empty_like(sums)
        running[order] = sums - np.repeat(before, counts).astype(sums.dtype, copy=False)
        if start is not None:
            running = running + np.asarray(start)[self.index]
        return running


class BatchVertex(Vertex):
    """A vertex class whose stream messages run as batches: implement :meth:`on_updates`
    (see the module docstring for when to use it and its guarantees)."""

    type_name: ClassVar[str] = "BatchVertex"

    def on_updates(self, batch: MessageBatch) -> Mapping[str, npt.ArrayLike]:
        """The state fields each message leaves behind: ``{field: values}`` with one value
        per message of ``batch`` (the vertex's state after that message has these fields
        set; fields not returned keep their value). Must not change ``batch``."""
        raise NotImplementedError(f"{type(self).__name__} must implement on_updates")

    def on_message(self, ctx: Context, msg: Mapping[str, Any]) -> None:
        """One message: :meth:`on_updates` on a batch of one row (the path a message takes
        when it creates its vertex, or when its batch is run again message by message)."""
        batch = MessageBatch([ctx.vertex_id], [ctx.time], [ctx.clock], [msg], [ctx.state])
        for field, value in batch_rows(self, batch)[0].items():
            ctx.state[field] = value


def batch_rows(behavior: BatchVertex, batch: MessageBatch) -> list[dict[str, Any]]:
    """Run ``behavior.on_updates(batch)`` and check its result: per message, the state
    fields it sets, as plain Python values. Raises ``TypeError``/``ValueError`` naming
    the class and field when the result is not one value per message."""
    name = type(behavior).__name__
    out = behavior.on_updates(batch)
    if not isinstance(out, Mapping):
        raise TypeError(f"{name}.on_updates must return a mapping of field -> values")
    n = len(batch)
    columns: list[tuple[str, list[Any]]] = []
    for field, values in out.items():
        if not isinstance(field, str):
            raise TypeError(f"{name}.on_updates: field names must be str, got {field!r}")
        as_list = values.tolist() if isinstance(values, np.ndarray) else list(values)
        if len(as_list) != n:
            raise ValueError(
                f"{name}.on_updates: field {field!r} has {len(as_list)} values for {n} messages"
            )
        columns.append((field, as_list))
    return [{field: values[i] for field, values in columns} for i in range(n)]


mark_module_api(globals(), public=("BatchVertex", "MessageBatch"))
