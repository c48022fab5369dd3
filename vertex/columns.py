"""Stream updates as columns: :class:`UpdateBatch`, consecutive updates of one source held
as an Arrow record batch instead of one :class:`~vertex.records.Update` object per line.

The columns (the Arrow schema of every batch):

* ``kind`` -- dictionary-encoded :class:`~vertex.records.UpdateKind` values;
* ``vertex`` / ``dst`` -- int64 vertex ids (``dst`` null where the kind has no target);
* ``time`` -- int64 or float64 event times, as the source reads them (a SNAP time is an
  ``int``, a Bitcoin CSV time a ``float``: the column type keeps that, so an update built
  back from a row equals the one the row path builds);
* ``offset`` -- int64 source offsets (a file's 1-based line numbers), strictly increasing;
* ``props`` (optional) -- a struct column of the rows' properties (e.g. ``weight``);
  absent when the updates carry none. A null slot or a null value is a property the row
  does not have, so a property *set to* ``None`` cannot travel as columns (its update
  travels as a row);
* ``vertex_type`` (optional) -- the string type an ``add_vertex`` row names (null: none).

Guarantees:

* A batch means exactly the updates :meth:`UpdateBatch.updates` builds back, one per row
  in order, stamped ``(source, offset)``: whatever consumes columns must give the same
  result as offering those updates one at a time (the row path stays the definition).
* Batches are built only from values a source already validated; the columns cannot
  hold a value an :class:`~vertex.records.Update` would refuse (ids are int64, times are
  finite and non-negative).
* No Ray, no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from vertex.annotations import mark_module_api
from vertex.arrow_pandas import nanosecond_values, pyarrow_with_pandas
from vertex.records import Update, UpdateKind

__all__ = ["KIND_CODES", "UpdateBatch", "kind_column", "struct_dicts"]

KIND_CODES: dict[UpdateKind, int] = {kind: i for i, kind in enumerate(UpdateKind)}
"""Each kind's code in the ``kind`` column: its position in :class:`UpdateKind`."""
_ADD_EDGE = KIND_CODES[UpdateKind.ADD_EDGE]
_MESSAGE = KIND_CODES[UpdateKind.MESSAGE]


def kind_column(codes: np.ndarray | pa.Array) -> pa.DictionaryArray:
    """The ``kind`` column of kind codes (:data:`KIND_CODES`), dictionary-encoded as
    every batch's is."""
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), _kinds())


@functools.cache
def _kinds() -> pa.Array:
    """The ``kind`` dictionary: every kind's name, in code order. Made on first use, not
    on import: pyarrow's first array imports pandas (to check for pandas inputs), which a
    process that only reads logs never needs to."""
    return pa.array([kind.value for kind in UpdateKind], pa.string())


def struct_dicts(props: pa.StructArray) -> list[dict[str, Any]]:
    """Each slot of a struct column of properties as a new dict: a null slot or a null
    value is a property the row does not have (the one reading of a ``props`` column).

    >>> struct_dicts(pa.array([{"w": 1}, None, {"w": None}]))
    [{'w': 1}, {}, {}]
    """
    if nanosecond_values(props.type):  # read as a process with pandas reads them
        pyarrow_with_pandas()
    names = [field.name for field in props.type]
    fields = [props.field(i) for i in range(len(names))]
    if props.null_count or any(f.null_count for f in fields):
        return [
            {} if slot is None else {k: v for k, v in slot.items() if v is not None}
            for slot in props.to_pylist()
        ]
    columns = [f.to_pylist() for f in fields]
    if len(names) == 1:
        (name,) = names
        return [{name: value} for value in columns[0]]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


@dataclass(frozen=True, slots=True)
class UpdateBatch:
    """Consecutive updates of source ``source`` as columns (see the module doc).

    >>> import numpy as np
    >>> b = UpdateBatch.edges("s", np.array([1, 2]), np.array([2, 3]), np.array([10, 11]),
    ...                       np.array([5, 6]))
    >>> len(b), [(u.vertex, u.dst, u.ts, u.offset) for u in b.updates()]
    (2, [(1, 2, 10, 5), (2, 3, 11, 6)])
    """

    source: str
    table: pa.RecordBatch

    @classmethod
    def edges(
        cls,
        source: str,
        vertex: np.ndarray | pa.Array,
        dst: np.ndarray | pa.Array,
        time: np.ndarray | pa.Array,
        offset: np.ndarray | pa.Array,
        props: dict[str, np.ndarray | pa.Array] | None = None,
    ) -> UpdateBatch:
        """A batch of ``add_edge`` updates from validated arrays (numpy or Arrow) of one
        length; the time column keeps its type (int64 or float64)."""
        n = len(vertex)
        kind = kind_column(np.full(n, _ADD_EDGE, np.int8))
        columns: list[pa.Array] = [
            kind,
            pa.array(vertex, pa.int64()),
            pa.array(dst, pa.int64()),
            pa.array(time),
            pa.array(offset, pa.int64()),
        ]
        names = ["kind", "vertex", "dst", "time", "offset"]
        if props:
            columns.append(pa.StructArray.from_arrays(list(props.values()), list(props)))
            names.append("props")
        return cls(source, pa.RecordBatch.from_arrays(columns, names))

    @classmethod
    def messages(
        cls,
        source: str,
        vertex: np.ndarray | pa.Array,
        time: np.ndarray | pa.Array,
        offset: np.ndarray | pa.Array,
        props: pa.StructArray | None = None,
    ) -> UpdateBatch:
        """A batch of user ``message`` updates from validated arrays of one length;
        ``props`` holds the payloads (``None``: every payload is empty)."""
        n = len(vertex)
        columns: list[pa.Array] = [
            kind_column(np.full(n, _MESSAGE, np.int8)),
            pa.array(vertex, pa.int64()),
            pa.nulls(n, pa.int64()),
            pa.array(time),
            pa.array(offset, pa.int64()),
        ]
        names = ["kind", "vertex", "dst", "time", "offset"]
        if props is not None:
            columns.append(props)
            names.append("props")
        return cls(source, pa.RecordBatch.from_arrays(columns, names))

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def last_offset(self) -> int:
        """The offset of the last row."""
        return self.table.column("offset")[-1].as_py()  # type: ignore[no-any-return]

    @property
    def only_edges_added(self) -> bool:
        """Whether every row is an ``add_edge`` naming no vertex type (the built-in
        sources' only kind)."""
        kind = self.table.column("kind")
        indices = kind.indices.to_numpy(zero_copy_only=False)
        return bool((indices == _ADD_EDGE).all()) and not self._typed()

    @property
    def only_messages(self) -> bool:
        """Whether every row is a user ``message`` naming no vertex type."""
        kind = self.table.column("kind")
        indices = kind.indices.to_numpy(zero_copy_only=False)
        return bool((indices == _MESSAGE).all()) and not self._typed()

    def _typed(self) -> bool:
        """Whether a row names a vertex type."""
        if "vertex_type" not in self.table.schema.names:
            return False
        types = self.table.column("vertex_type")
        return bool(types.null_count < len(types))

    def after(self, offset: int) -> UpdateBatch:
        """The rows with an offset above ``offset`` (offsets increase: a zero-copy slice;
        the batch itself when all are)."""
        start = int(np.searchsorted(self.column("offset"), offset, side="right"))
        return self.slice(start) if start else self

    def column(self, name: str) -> np.ndarray:
        """Column ``name`` (``vertex``, ``dst``, ``time``, ``offset``) as a numpy array."""
        return self.table.column(name).to_numpy(zero_copy_only=False)

    def values(self, name: str) -> list[Any]:
        """Column ``name`` as Python values (ints stay ints, floats floats)."""
        return self.table.column(name).to_pylist()  # type: ignore[no-any-return]

    def prop_dicts(self) -> list[dict[str, Any]]:
        """Each row's properties as a new dict (``{}`` without a ``props`` column); a
        null slot or value is a property the row does not have."""
        if "props" not in self.table.schema.names:
            return [{} for _ in range(len(self))]
        return struct_dicts(self.table.column("props"))

    def vertex_types(self) -> list[str | None]:
        """Each row's vertex type (``None`` where it names none)."""
        if "vertex_type" not in self.table.schema.names:
            return [None] * len(self)
        return self.values("vertex_type")

    def updates(self) -> Iterator[Update]:
        """The rows as :class:`~vertex.records.Update`s stamped ``(source, offset)``: what
        the batch means, and the row path's input when a consumer cannot take columns."""
        kinds = self.table.column("kind").to_pylist()
        rows = zip(
            kinds,
            self.values("vertex"),
            self.values("time"),
            self.values("dst"),
            self.prop_dicts(),
            self.vertex_types(),
            self.values("offset"),
            strict=True,
        )
        source = self.source
        for kind, vertex, ts, dst, props, vertex_type, offset in rows:
            yield Update(UpdateKind(kind), vertex, ts, dst, props, vertex_type, source, offset)

    def slice(self, start: int, stop: int | None = None) -> UpdateBatch:
        """Rows ``start .. stop-1`` (zero-copy)."""
        stop = len(self) if stop is None else stop
        return UpdateBatch(self.source, self.table.slice(start, stop - start))

    @staticmethod
    def concat(batches: Sequence[UpdateBatch]) -> UpdateBatch:
        """The rows of ``batches`` (one source, one schema) in order."""
        table = pa.Table.from_batches([b.table for b in batches]).combine_chunks()
        return UpdateBatch(batches[0].source, table.to_batches()[0])


mark_module_api(globals())
