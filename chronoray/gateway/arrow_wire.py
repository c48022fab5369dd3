"""Gateway batches as Arrow columns: ``IngestBatch.arrow_ipc`` both ways (no Ray here).

The client side turns what a source reads -- :class:`~vertex.columns.UpdateBatch` es of a
file source, or :class:`~vertex.records.Update` s converted once -- into one Arrow IPC
stream per batch (:func:`to_arrow_ipc`). The server side (:func:`arrow_updates_of`)
decodes one, bounded by rows and bytes, and checks it **as vectors** with the rules and
the words of :func:`~chronoray.gateway.wire.updates_of`; the first bad row is named
``batch.arrow_ipc[row 17].dst: add_edge needs the edge's target`` and the batch is refused
whole. The schema is documented in ``chronoray/v1/gateway.proto`` (``IngestBatch``).

Guarantees: an :class:`ArrowUpdates` holds an :class:`~vertex.columns.UpdateBatch` that
means exactly the updates :meth:`ArrowUpdates.updates` builds, one per row in order,
stamped ``(source, offset)`` -- the same updates the equivalent records give. A null
property value is a property the row does not have (a property set to ``None`` travels as
records).

>>> data = to_arrow_ipc([table_of_updates([Update.add_edge(1, 2, 10).with_origin("s", 7)])])
>>> batch = arrow_updates_of(data, "s", "batch.arrow_ipc")
>>> batch.updates()
[Update(kind=<UpdateKind.ADD_EDGE: 'add_edge'>, vertex=1, ts=10, dst=2, props={}, \
vertex_type=None, source='s', offset=7)]
>>> arrow_updates_of(data, "s", "batch.arrow_ipc", after=7)
Traceback (most recent call last):
...
chronoray.gateway.wire.InvalidField: batch.arrow_ipc[row 0].offset: 7 does not follow 7 \
(offsets strictly increase)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronoray.gateway.wire import InvalidField
from vertex.columns import KIND_CODES, UpdateBatch, kind_column
from vertex.records import EDGE_KINDS, Update, UpdateKind

__all__ = ["ArrowUpdates", "arrow_updates_of", "table_of_updates", "to_arrow_ipc"]

_KIND_NAMES = [kind.value for kind in UpdateKind]  # by code (KIND_CODES)
_EDGE = np.array([kind in EDGE_KINDS for kind in UpdateKind])  # by code
_ADD_VERTEX = KIND_CODES[UpdateKind.ADD_VERTEX]
_REMOVE_EDGE = KIND_CODES[UpdateKind.REMOVE_EDGE]
_REQUIRED = ("offset", "kind", "vertex", "dst", "time")
_OPTIONAL = ("props", "vertex_type")
_INT64_MAX = 2**63 - 1
_DECODED_PER_BYTE = 8  # decoded columns may be at most this many times the bytes sent


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _is_prop(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_boolean(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_null(kind)
    )


_COLUMN_TYPES: dict[str, tuple[Callable[[pa.DataType], bool], str]] = {
    "offset": (pa.types.is_integer, "an integer type (uint64 or int64)"),
    "kind": (_is_text, "string or dictionary<string>"),
    "vertex": (pa.types.is_integer, "an integer type (int64 ids)"),
    "dst": (lambda t: pa.types.is_integer(t) or pa.types.is_null(t), "an integer type"),
    "time": (lambda t: pa.types.is_integer(t) or pa.types.is_floating(t), "int64 or float64"),
    "props": (pa.types.is_struct, "a struct, one field per property"),
    "vertex_type": (lambda t: _is_text(t) or pa.types.is_null(t), "string"),
}


# -- client side ----------------------------------------------------------------------------


def table_of_updates(updates: Sequence[Update]) -> pa.RecordBatch:
    """Stamped updates as one record batch of the wire schema (converted once, at the
    client's edge). Vertex ids must be ints (``ValueError`` otherwise: string ids travel
    as records); the time column is int64 when every time is an int, else float64."""
    if not updates:
        raise ValueError("no updates")
    for u in updates:
        if not isinstance(u.vertex, int) or not (u.dst is None or isinstance(u.dst, int)):
            raise ValueError(
                f"update at offset {u.offset} has a string vertex id: Arrow batches carry "
                "int64 ids; send records (arrow=False)"
            )
    times = [u.ts for u in updates]
    integral = all(isinstance(t, int) for t in times)
    kinds = np.array([KIND_CODES[u.kind] for u in updates], np.int8)
    columns: dict[str, pa.Array] = {  # vertex.columns' schema: its batches and these mix
        "kind": kind_column(kinds),
        "vertex": pa.array([u.vertex for u in updates], pa.int64()),
        "dst": pa.array([u.dst for u in updates], pa.int64()),
        "time": pa.array(times, pa.int64() if integral else pa.float64()),
        "offset": pa.array([u.offset for u in updates], pa.int64()),
    }
    names = sorted({name for u in updates for name in u.props})
    if names:
        slots = [
            None if u.kind is UpdateKind.REMOVE_EDGE else {n: u.props.get(n) for n in names}
            for u in updates
        ]
        try:
            columns["props"] = pa.array(slots)
        except pa.ArrowException as exc:
            raise ValueError(
                f"the properties of the updates at offsets {updates[0].offset}.."
                f"{updates[-1].offset} do not fit one Arrow column each ({exc}); send "
                "records (arrow=False)"
            ) from None
    if any(u.vertex_type for u in updates):
        columns["vertex_type"] = pa.array([u.vertex_type for u in updates], pa.string())
    return pa.RecordBatch.from_pydict(columns)


def to_arrow_ipc(tables: Sequence[pa.RecordBatch]) -> bytes:
    """Record batches of one schema as the bytes of one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tables[0].schema) as writer:
        for table in tables:
            writer.write_batch(table)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


# -- server side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArrowUpdates:
    """A checked Arrow batch of one source: ``batch`` in :mod:`vertex.columns`' schema
    (``kind`` dictionary-encoded in :class:`UpdateKind` order, ``vertex``/``dst``/
    ``offset`` int64, ``time`` int64 or float64, optional ``props`` and ``vertex_type``),
    ``first_row`` the row of the client's batch where it starts (rows are named so in
    errors), ``field`` the request field."""

    batch: UpdateBatch
    field: str
    first_row: int = 0

    def __len__(self) -> int:
        return len(self.batch)

    @property
    def offset(self) -> int:
        """The offset of the last row (the batch's, as a record list's last ``offset``)."""
        return self.batch.last_offset

    def column(self, name: str) -> np.ndarray:
        return self.batch.column(name)

    def row(self, index: int, column: str) -> str:
        """The name of ``column`` of row ``index`` of this batch in errors."""
        return f"{self.field}[row {self.first_row + index}].{column}"

    def after(self, offset: int) -> ArrowUpdates:
        """The rows after ``offset`` (offsets increase: a slice, zero-copy)."""
        rest = self.batch.after(offset)
        return ArrowUpdates(rest, self.field, self.first_row + len(self) - len(rest))

    def updates(self) -> list[Update]:
        """The rows as stamped updates: what the batch means."""
        return list(self.batch.updates())


def arrow_updates_of(
    data: bytes,
    source: str,
    field: str,
    after: int = 0,
    vertex_types: Iterable[str] | None = None,
    max_rows: int = 10_000,
    max_bytes: int = 16 * 1024 * 1024,
) -> ArrowUpdates:
    """The checked updates of the Arrow IPC stream ``data`` a client sent as ``field``,
    stamped ``(source, offset)``: at most ``max_rows`` rows and ``max_bytes`` bytes
    (decoded: at most :data:`_DECODED_PER_BYTE` times that), offsets strictly increasing
    from above ``after``, ``vertex_types`` the names an ``add_vertex`` may give.
    :class:`InvalidField` names the first bad row and column (nothing is applied)."""
    if len(data) > max_bytes:
        raise InvalidField(field, f"{len(data)} bytes; at most {max_bytes} per batch")
    columns = _decoded(data, field, max_rows, max_bytes * _DECODED_PER_BYTE)
    return _checked(columns, source, field, after, frozenset(vertex_types or ()))


def _decoded(data: bytes, field: str, max_rows: int, max_decoded: int) -> dict[str, pa.Array]:
    """The stream's columns, each as one array (the schema checked before any row is read)."""
    try:
        reader = pa.ipc.open_stream(pa.py_buffer(data))
        _check_schema(reader.schema, field)
        batches, rows, size = [], 0, 0
        for batch in reader:
            rows += batch.num_rows
            size += batch.nbytes
            if rows > max_rows:
                raise InvalidField(
                    field, f"more than {max_rows} rows; at most {max_rows} per batch"
                )
            if size > max_decoded:
                raise InvalidField(field, f"decodes to more than {max_decoded} bytes")
            batch.validate(full=True)  # untrusted bytes: offsets, UTF-8... before any kernel
            batches.append(batch)
        if not rows:
            raise InvalidField(field, "an empty batch")
        table = pa.Table.from_batches(batches, reader.schema)
        return {name: _one_array(table.column(name)) for name in table.schema.names}
    except InvalidField:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InvalidField(field, f"not a readable Arrow IPC stream ({text})") from None


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column as one array; dictionary chunks (each may have its own dictionary) are
    decoded first."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.combine_chunks()


def _check_schema(schema: pa.Schema, field: str) -> None:
    names = schema.names
    if len(set(names)) != len(names):
        raise InvalidField(field, f"a column name repeats: {', '.join(names)}")
    for name in names:
        if name not in _COLUMN_TYPES:
            known = ", ".join((*_REQUIRED, *_OPTIONAL))
            raise InvalidField(f"{field}.{name}", f"not a column of an update batch ({known})")
    for name in _REQUIRED:
        if name not in names:
            raise InvalidField(f"{field}.{name}", "a required column is missing")
    for name in names:
        kind = schema.field(name).type
        accepts, wanted = _COLUMN_TYPES[name]
        if not accepts(kind):
            raise InvalidField(f"{field}.{name}", f"type {kind}; must be {wanted}")
    if "props" in names:
        for prop in schema.field("props").type:
            where = f"{field}.props.{prop.name}"
            if not prop.name:
                raise InvalidField(f"{field}.props", "an empty property name")
            if not _is_prop(prop.type):
                raise InvalidField(
                    where,
                    f"type {prop.type}; a property is a bool, integer, float, string or bytes",
                )


@dataclass(slots=True)
class _Rules:
    """Row rules checked as vectors, in the order :func:`~chronoray.gateway.wire.updates_of`
    checks a record's fields: the first bad row is reported, with its first bad field."""

    found: list[tuple[int, int, str, Callable[[int], str]]]

    def check(self, column: str, bad: np.ndarray, reason: Callable[[int], str]) -> None:
        if bad.any():
            self.found.append((int(np.argmax(bad)), len(self.found), column, reason))

    def raise_first(self, batch_field: str) -> None:
        if self.found:
            row, _, column, reason = min(self.found, key=lambda f: (f[0], f[1]))
            raise InvalidField(f"{batch_field}[row {row}].{column}", reason(row))


def _ints(array: pa.Array, rules: _Rules, column: str) -> np.ndarray:
    """An integer column as int64 values (nulls as 0), its nulls and out-of-range values
    counted as bad rows."""
    if pa.types.is_null(array.type):
        array = pa.nulls(len(array), pa.int64())
    nulls = array.is_null().to_numpy(zero_copy_only=False)
    values = pc.fill_null(array, 0).to_numpy(zero_copy_only=False)
    if column != "dst":
        rules.check(column, nulls, lambda i: f"no {column} set")
    if values.dtype == np.uint64:
        raw = values
        big = raw > _INT64_MAX
        rules.check(column, big, lambda i: f"{raw[i]} is beyond int64")
        values = np.where(big, 0, raw)
    out: np.ndarray = values.astype(np.int64)
    return out


def _checked(
    columns: dict[str, pa.Array], source: str, field: str, after: int, known: frozenset[str]
) -> ArrowUpdates:
    rules = _Rules([])
    n = len(columns["offset"])
    offsets = _ints(columns["offset"], rules, "offset")
    rules.check("offset", offsets < 1, lambda i: "offsets start at 1")
    names = columns["kind"].cast(pa.string())
    lowered = pc.utf8_lower(names)
    index = pc.index_in(lowered, value_set=pa.array(_KIND_NAMES)).to_numpy(zero_copy_only=False)
    kinds = np.nan_to_num(index.astype(np.float64), nan=-1).astype(np.int64)
    no_kind = names.is_null().to_numpy(zero_copy_only=False)
    rules.check("kind", no_kind, lambda i: "no kind set")
    rules.check(
        "kind", (kinds < 0) & ~no_kind, lambda i: f"not an update kind: {names[i].as_py()!r}"
    )
    vertex = _ints(columns["vertex"], rules, "vertex")
    has_dst = columns["dst"].is_valid().to_numpy(zero_copy_only=False)
    dst = _ints(columns["dst"], rules, "dst")
    edge = np.where(kinds >= 0, _EDGE[kinds], False)
    named = kinds >= 0
    kind_of: Callable[[int], str] = lambda i: _KIND_NAMES[kinds[i]]  # noqa: E731
    rules.check("dst", named & edge & ~has_dst, lambda i: f"{kind_of(i)} needs the edge's target")
    rules.check("dst", named & ~edge & has_dst, lambda i: f"{kind_of(i)} takes no dst")
    time = _time(columns["time"], rules)
    if "props" in columns:
        slots = columns["props"].is_valid().to_numpy(zero_copy_only=False)
        rules.check(
            "props", (kinds == _REMOVE_EDGE) & slots, lambda i: "remove_edge takes no properties"
        )
    vertex_type = columns.get("vertex_type")
    if vertex_type is not None:
        vertex_type = vertex_type.cast(pa.string())
        _vertex_types(vertex_type, kinds, known, rules)
    previous = np.concatenate(([after], offsets[:-1]))
    rules.check(
        "offset",
        offsets <= previous,
        lambda i: f"{offsets[i]} does not follow {previous[i]} (offsets strictly increase)",
    )
    rules.raise_first(field)
    arrays = [
        kind_column(kinds),
        pa.array(vertex, pa.int64()),
        pa.array(dst, pa.int64(), mask=~has_dst),
        time,
        pa.array(offsets, pa.int64()),
    ]
    table_names = ["kind", "vertex", "dst", "time", "offset"]
    for name, column in (("props", columns.get("props")), ("vertex_type", vertex_type)):
        if column is not None:
            arrays.append(column)
            table_names.append(name)
    table = pa.RecordBatch.from_arrays(arrays, table_names)
    assert table.num_rows == n
    return ArrowUpdates(UpdateBatch(source, table), field)


def _time(array: pa.Array, rules: _Rules) -> pa.Array:
    """The time column as int64 or float64; nulls and non-finite times are bad rows."""
    nulls = array.is_null().to_numpy(zero_copy_only=False)
    rules.check("time", nulls, lambda i: "no time set (int or float)")
    if pa.types.is_integer(array.type):
        if array.type == pa.uint64():
            raw = pc.fill_null(array, 0).to_numpy(zero_copy_only=False)
            rules.check("time", raw > _INT64_MAX, lambda i: f"time {raw[i]} is beyond int64")
        return array.cast(pa.int64(), safe=False)
    floats = array.cast(pa.float64())
    values = pc.fill_null(floats, 0.0).to_numpy(zero_copy_only=False)
    rules.check("time", ~np.isfinite(values), lambda i: f"time must be finite, got {values[i]}")
    return floats


def _vertex_types(array: pa.Array, kinds: np.ndarray, known: frozenset[str], rules: _Rules) -> None:
    given = array.is_valid().to_numpy(zero_copy_only=False)
    rules.check(
        "vertex_type",
        given & (kinds >= 0) & (kinds != _ADD_VERTEX),
        lambda i: f"{_KIND_NAMES[kinds[i]]} takes no vertex_type",
    )
    if pa.types.is_null(array.type):
        return
    listed = pc.is_in(array, value_set=pa.array(sorted(known), pa.string()))
    unknown = given & ~pc.fill_null(listed, False).to_numpy(zero_copy_only=False)
    choices = ", ".join(sorted(known)) or "none"
    rules.check(
        "vertex_type",
        unknown,
        lambda i: f"unknown vertex type {array[i].as_py()!r} (known: {choices})",
    )
