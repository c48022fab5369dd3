"""GraphCEP on chronoray: complex event processing with an embedded graph (seed 002).

Split -> process -> merge over event streams: a :mod:`splitter <cep.splitter>` (key-based,
predicate-based with open/close predicates, broadcast), :mod:`operator instances
<cep.operator>` running user code per partition in parallel on Ray over Arrow batches,
each able to hold a chronoray graph (``manipulate_graph``, ``execute``), and a
:mod:`merger <cep.merger>` with one deterministic order and top-k combination
(:mod:`cep.runtime` runs them). On top: the DEBS 2016 Grand Challenge queries
(:mod:`cep.debs`), readers of the official files (:mod:`cep.columns` into one Arrow table;
:mod:`cep.readers` event by event) and a seeded generator of such streams
(:mod:`cep.generator`).
"""

from cep.columns import SCHEMA, Columns, read_columns
from cep.debs import QUERY_FILES, query_pipeline, run_query
from cep.events import Comment, Event, Friendship, Like, Post, format_time, parse_time
from cep.generator import generate
from cep.merger import Ranking, Report, TopKMerger
from cep.operator import Context, EmbeddedGraph, Operator, TopKOperator
from cep.readers import DebsFiles, StreamStats, read_stream
from cep.runtime import Pipeline, RunReport
from cep.splitter import Broadcast, ByKind, KeySplitter, PredicateSplitter, RowSplitter

__all__ = [
    "Broadcast",
    "ByKind",
    "Columns",
    "Comment",
    "Context",
    "DebsFiles",
    "EmbeddedGraph",
    "Event",
    "Friendship",
    "KeySplitter",
    "Like",
    "Operator",
    "Pipeline",
    "Post",
    "PredicateSplitter",
    "QUERY_FILES",
    "Ranking",
    "Report",
    "RowSplitter",
    "RunReport",
    "SCHEMA",
    "StreamStats",
    "TopKMerger",
    "TopKOperator",
    "format_time",
    "generate",
    "parse_time",
    "query_pipeline",
    "read_columns",
    "read_stream",
    "run_query",
]
