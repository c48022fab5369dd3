"""Snapshot parts as Arrow tables.

Vertex tables have ``id``, ``type``, ``clock``, ``time`` and one column per state key;
edge tables ``src``, ``dst`` and one column per edge property. Ids are ``int64`` when all
ids are ints, else strings. A column holding mappings, or values Arrow cannot type
(containers of mixed shapes, objects), holds their JSON text instead.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

__all__ = ["rows_to_table", "empty_vertices", "empty_edges"]

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
