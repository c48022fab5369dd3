"""DEBS 2016 Grand Challenge queries on the CEP layer (Query 1: :mod:`cep.debs.q1`,
Query 2: :mod:`cep.debs.q2`), and :func:`run_query` to run either over the official files."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from cep.columns import read_columns
from cep.debs.q1 import Q1Operator, q1_merger, q1_splitter
from cep.debs.q2 import Q2GraphOperator, Q2Operator, q2_merger, q2_splitter
from cep.readers import DebsFiles, StreamStats
from cep.runtime import Pipeline, RunReport

__all__ = ["QUERY_FILES", "run_query", "query_pipeline"]

QUERY_FILES = {"q1": ("posts", "comments"), "q2": ("comments", "likes", "friendships")}
"""The input files each query reads."""


def query_pipeline(
    query: Literal["q1", "q2"],
    *,
    k: int = 3,
    d: int = 3600,
    community: Literal["component", "clique"] = "component",
    store: Literal["memory", "log"] = "memory",
    instances: int = 1,
    shards: int = 1,
    runtime: Literal["ray", "local"] = "ray",
    batch_size: int = 5000,
    log_dir: str | None = None,
) -> Pipeline:
    """The split -> process -> merge pipeline of ``query`` (``k``, ``d`` in seconds,
    ``community``, ``store`` and ``shards`` -- of each instance's graph with
    ``store="log"`` -- are Query 2's; see :mod:`cep.debs.q2`)."""
    common: dict[str, Any] = {
        "instances": instances, "runtime": runtime, "batch_size": batch_size, "log_dir": log_dir,
    }  # fmt: skip
    if query == "q1":
        return Pipeline(q1_splitter(), Q1Operator, q1_merger(), **common)
    if query == "q2":
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if d < 1:
            raise ValueError(f"d must be >= 1 second, got {d}")
        if store == "memory":
            operator: Callable[[], Any] = functools.partial(Q2Operator, k, d, community)
        elif store == "log":
            operator = functools.partial(Q2GraphOperator, k, d, community, shards)
        else:
            raise ValueError(f"store must be 'memory' or 'log', got {store!r}")
        return Pipeline(q2_splitter(), operator, q2_merger(k), **common)
    raise ValueError(f"unknown query {query!r}; expected 'q1' or 'q2'")


def run_query(
    query: Literal["q1", "q2"],
    files: DebsFiles,
    write: Callable[[str], Any],
    *,
    on_error: Literal["raise", "skip"] = "raise",
    rejects: str | None = None,
    rate: float | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> tuple[RunReport, StreamStats]:
    """Run ``query`` over the files it needs from ``files``, passing each output line to
    ``write``; ``options`` go to :func:`query_pipeline`, ``rate`` to
    :meth:`~cep.runtime.Pipeline.run`. Returns the run's report and the reader's counters
    (events per file, rejected lines). A malformed line with ``on_error="raise"`` is
    raised (:class:`chronoray.MalformedRecord`) once the events before it are processed
    and their lines written."""
    read = read_columns(files.only(*QUERY_FILES[query]), on_error, rejects)
    with query_pipeline(query, **options) as pipeline:
        report = pipeline.run(read.table, write, rate=rate, progress=progress)
    if read.error is not None:
        raise read.error
    return report, read.stats
