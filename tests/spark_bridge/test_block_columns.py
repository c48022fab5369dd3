"""A prepared Spark block read as columns (``BlockLayout.batches``) means what reading it
row by row (``BlockLayout.updates``) means: the same updates, offsets and property dicts,
in order; blocks whose columns cannot say it exactly (string ids, other kinds, null
properties) go row by row. No Spark needed: the block is built here."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from spark_bridge.ingest import BlockLayout
from vertex.columns import UpdateBatch
from vertex.records import Update


def _block(
    rows: int,
    *,
    ids: Any = None,
    kinds: list[str] | None = None,
    weights: list[Any] | None = None,
    part: int = 1,
) -> pa.Table:
    columns = {
        "_cr_src": pa.array([i % 7 for i in range(rows)]).cast(ids or pa.int64()),
        "_cr_dst": pa.array([(i * 3) % 11 for i in range(rows)]).cast(ids or pa.int64()),
        "_cr_time": pa.array([float(i // 2) for i in range(rows)]),
        "_cr_part": pa.array([part if i % 5 else 0 for i in range(rows)], pa.int32()),
    }
    if kinds is not None:
        columns["_cr_kind"] = pa.array([kinds[i % len(kinds)] for i in range(rows)])
    if weights is not None:
        columns["_cr_p0"] = pa.array([weights[i % len(weights)] for i in range(rows)])
    return pa.table(columns)


def _flat(items: Any) -> list[Update]:
    out: list[Update] = []
    for item in items:
        out += list(item.updates()) if isinstance(item, UpdateBatch) else [item]
    return out


@pytest.mark.parametrize(
    "layout, block, columnar",
    [
        (BlockLayout(True, False, ()), _block(25_000), True),
        (BlockLayout(True, False, ("weight",)), _block(30, weights=[1, -2, 3]), True),
        (BlockLayout(True, True, ()), _block(30, kinds=["add_edge"]), True),
        (BlockLayout(True, True, ()), _block(30, kinds=["add_edge", "update_edge"]), False),
        (BlockLayout(True, False, ("weight",)), _block(30, weights=[1, None]), False),
        (BlockLayout(True, False, ()), _block(30, ids=pa.string()), False),
    ],
)
def test_block_columns_mean_the_block_rows(
    layout: BlockLayout, block: pa.Table, columnar: bool
) -> None:
    rows = list(layout.updates(block, 1, "s[1/2 f]"))
    items = list(layout.batches(block, 1, "s[1/2 f]"))
    assert _flat(items) == rows and len(rows) == block.num_rows * 4 // 5
    assert [u.offset for u in rows] == list(range(1, len(rows) + 1))
    assert any(isinstance(i, UpdateBatch) for i in items) is columnar
