"""Snapshot parts as Arrow tables.

Vertex tables have ``id``, ``type``, ``clock``, ``time`` and one column per state key;
edge tables ``src``, ``dst`` and one column per edge property (a key that clashes with a
fixed column is prefixed with ``state_``). A snapshot's tables are built from the graph's
:class:`~shards.codec.Schema` -- every key its log ever recorded, with one kind each -- so
every cut, empty or not, early or late, has the same columns and types
(:func:`column_tables` from a part's columns, :func:`snapshot_tables` from its rows):
ids ``int64`` when all ids were ints, else strings; ``int`` keys ``int64``, ``float``
``float64``, ``bool``, ``str`` strings, and anything else (containers, mixed kinds) the
value's JSON text.

:func:`rows_to_table` types free-form rows by their values (for model results).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from shards.codec import Schema

__all__ = [
    "EDGE_FIXED",
    "VERTEX_FIXED",
    "WINDOW_COLUMNS",
    "Columns",
    "column_name",
    "column_tables",
    "empty_edges",
    "empty_vertices",
    "rows_to_table",
    "snapshot_tables",
]

VERTEX_FIXED = ("id", "type", "clock", "time")
EDGE_FIXED = ("src", "dst")
_WINDOW = {"window_count": pa.int64(), "window_first": pa.float64(), "window_last": pa.float64()}
WINDOW_COLUMNS = tuple(_WINDOW)
"""The columns a window's edge tables add after the properties."""
_ARROW = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}

_VERTEX_SCHEMA = pa.schema(
    [("id", pa.int64()), ("type", pa.string()), ("clock", pa.int64()), ("time", pa.float64())]
)
_EDGE_SCHEMA = pa.schema([("src", pa.int64()), ("dst", pa.int64())])


def empty_vertices() -> pa.Table:
    """A vertex table with no rows."""
    return _VERTEX_SCHEMA.empty_table()


def empty_edges() -> pa.Table:
    """An edge table with no rows."""
    return _EDGE_SCHEMA.empty_table()


def column_name(key: Any, fixed: tuple[str, ...]) -> str:
    """The column of a state key or edge property (``state_`` + key if it clashes)."""
    return f"state_{key}" if key in fixed else str(key)


Columns = dict[str, list[Any]]
"""A part's table before typing: each column's values by column name, in row order."""


def snapshot_tables(
    vertex_rows: list[dict[str, Any]],
    edge_rows: list[dict[str, Any]],
    schema: Schema,
    *,
    windowed: bool = False,
) -> tuple[pa.Table, pa.Table]:
    """A snapshot part's ``(vertices, edges)`` with the columns and types of ``schema``
    (widened by any value it does not cover, so nothing is dropped or mistyped).

    >>> from shards.codec import Schema
    >>> schema = Schema("int", {"n": "int"}, {"w": "float"})
    >>> v, e = snapshot_tables([], [], schema)
    >>> v.schema.names, str(v.schema.field("n").type), e.schema.names
    (['id', 'type', 'clock', 'time', 'n'], 'int64', ['src', 'dst', 'w'])
    """
    schema = _covering(schema, vertex_rows, edge_rows)
    vertices = _row_columns(vertex_rows, VERTEX_FIXED, schema.vertex, VERTEX_FIXED)
    window = WINDOW_COLUMNS if windowed else ()
    edges = _row_columns(edge_rows, EDGE_FIXED + window, schema.edge, EDGE_FIXED)
    return column_tables(vertices, edges, schema, windowed=windowed)


def _row_columns(
    rows: list[dict[str, Any]],
    named: tuple[str, ...],
    kinds: dict[str, str],
    fixed: tuple[str, ...],
) -> Columns:
    names = [*named, *(column_name(key, fixed) for key in kinds)]
    return {name: [row.get(name) for row in rows] for name in names}


def column_tables(
    vertices: Columns, edges: Columns, schema: Schema, *, windowed: bool = False
) -> tuple[pa.Table, pa.Table]:
    """A snapshot part's ``(vertices, edges)`` from its columns: the fixed columns (and
    :data:`WINDOW_COLUMNS` if ``windowed``) and one per key of ``schema``, typed by its
    kind. ``schema`` must cover every value (:func:`snapshot_tables` widens it for rows
    that may hold others); the tables are those :func:`snapshot_tables` makes of the same
    rows.

    >>> from shards.codec import Schema
    >>> v, e = column_tables(
    ...     {"id": [1], "type": ["V"], "clock": [1], "time": [5.0], "n": [2]},
    ...     {"src": [], "dst": []}, Schema("int", {"n": "int"}, {}),
    ... )
    >>> v.to_pylist(), e.schema.names
    ([{'id': 1, 'type': 'V', 'clock': 1, 'time': 5.0, 'n': 2}], ['src', 'dst'])
    """
    ids = pa.int64() if schema.ids == "int" else pa.string()
    vertex_arrays = {
        "id": _id_column(vertices["id"], ids),
        "type": pa.array(vertices["type"], pa.string()),
        "clock": pa.array(vertices["clock"], pa.int64()),
        "time": pa.array(vertices["time"], pa.float64()),
    }
    vertex_arrays.update(_typed_columns(vertices, schema.vertex, VERTEX_FIXED))
    edge_arrays = {"src": _id_column(edges["src"], ids), "dst": _id_column(edges["dst"], ids)}
    edge_arrays.update(_typed_columns(edges, schema.edge, EDGE_FIXED))
    if windowed:
        edge_arrays.update({name: pa.array(edges[name], arrow) for name, arrow in _WINDOW.items()})
    return pa.table(vertex_arrays), pa.table(edge_arrays)


def _typed_columns(
    columns: Columns, kinds: dict[str, str], fixed: tuple[str, ...]
) -> dict[str, pa.Array]:
    typed = {}
    for key, kind in kinds.items():
        name = column_name(key, fixed)
        typed[name] = _column(name, columns[name], kind)
    return typed


def _covering(
    schema: Schema, vertex_rows: list[dict[str, Any]], edge_rows: list[dict[str, Any]]
) -> Schema:
    """``schema`` widened by whatever the rows hold that it does not cover. The log's schema
    covers every value the log recorded; this keeps rows built any other way from losing a
    column or an id silently."""
    extra = Schema.empty()
    seen: dict[str, type] = {}
    changed = False
    for rows, column, fixed, kinds in (
        (vertex_rows, "vertex", VERTEX_FIXED, schema.vertex),
        (edge_rows, "edge", EDGE_FIXED + tuple(_WINDOW), schema.edge),
    ):
        names = {column_name(k, fixed) for k in kinds}.union(fixed)
        for row in rows:
            if not row.keys() <= names:
                new = {k: v for k, v in row.items() if k not in names and v is not None}
                changed |= extra.note(seen, column, new)
    ids = [r["id"] for r in vertex_rows] + [r[k] for r in edge_rows for k in EDGE_FIXED]
    if schema.ids == "int" and any(type(v) is not int for v in ids):
        extra = extra._replace(ids="str")
        changed = True
    return (
        schema.merge(extra._replace(ids=extra.ids if changed else schema.ids))
        if changed
        else schema
    )


def _column(name: str, values: list[Any], kind: str) -> pa.Array:
    if kind == "json":
        return _json_column(values)
    if kind == "float":
        values = [None if v is None else float(v) for v in values]
    try:
        return pa.array(values, _ARROW[kind])
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
        raise ValueError(f"column {name!r} ({kind}) holds a value it cannot: {exc}") from exc


def _json_column(values: list[Any]) -> pa.Array:
    """Each value's JSON text; a column of nulls only (the type pyarrow would infer) when
    none has a value. Typed here rather than inferred: pyarrow's inference of a list's
    type imports pandas (see :mod:`vertex.arrow_pandas`)."""
    texts = [None if v is None else json.dumps(v, default=str) for v in values]
    if any(text is not None for text in texts):
        return pa.array(texts, pa.string())
    return pa.nulls(len(texts))


def _id_column(values: list[Any], arrow: pa.DataType) -> pa.Array:
    if arrow == pa.string():
        values = [str(v) for v in values]
    return pa.array(values, arrow)


def rows_to_table(rows: list[dict[str, Any]], id_columns: tuple[str, ...]) -> pa.Table:
    """Rows (dicts, possibly with different keys) as one table; missing values are null.

    >>> rows_to_table([{"id": 1, "a": 2}, {"id": 2, "b": "x"}], ("id",)).to_pylist()
    [{'id': 1, 'a': 2, 'b': None}, {'id': 2, 'a': None, 'b': 'x'}]
    """
    columns: dict[str, list[Any]] = {}
    for index, row in enumerate(rows):
        for key in row:
            if key not in columns:
                columns[key] = [None] * index
        for key, values in columns.items():
            values.append(row.get(key))
    arrays = {}
    for name, values in columns.items():
        if name in id_columns:
            arrays[name] = _ids(values)
        elif name == "time":
            arrays[name] = pa.array(values, type=pa.float64())
        else:
            arrays[name] = _typed(values)
    return pa.table(arrays)


def _ids(values: list[Any]) -> pa.Array:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.array(values, type=pa.int64())
    return pa.array([str(v) for v in values], type=pa.string())


def _typed(values: list[Any]) -> pa.Array:
    present = [v for v in values if v is not None]
    if any(isinstance(v, dict) for v in present):
        return _json(values)
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        if any(isinstance(v, float) for v in present):
            return pa.array([None if v is None else float(v) for v in values], pa.float64())
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return _json(values)


def _json(values: list[Any]) -> pa.Array:
    return pa.array([None if v is None else json.dumps(v, default=str) for v in values])
