"""Spark DataFrames as graph updates: checked, partitioned and ordered in Spark, handed to
Ray as Arrow blocks (RayDP), never through a file.

:func:`prepare_updates` takes a DataFrame with one row per stream update -- columns named
by :class:`UpdateColumns` -- and leaves, per *part*, one Arrow block in the Ray object
store that a source actor turns into updates (:meth:`BlockLayout.updates`):

* **Checked in Spark.** Each row gets the first thing wrong with it, or nothing: a null
  or non-integer id (``ids="int"`` on a string column), a null, non-numeric, NaN,
  infinite or negative time, a null or unknown kind, a missing target for an edge kind or
  one given to a vertex kind. Bad rows are counted and, by ``on_error``, either make the
  whole ingest refused before anything moves (``"raise"``: the first of them by position
  is returned) or are left out and written to a rejects table (``"skip"``: Parquet,
  columns ``source``, ``row``, ``reason`` and the row's own fields as text). ``row`` is a
  row's 1-based position in the DataFrame's order (for one file Spark reads, its data
  row number).
* **Parts by vertex.** A row goes to part ``shard_of(src, num_shards) % parts``
  (:func:`shards.routing.shard_of`, the graph's stable hash, in a pandas UDF): the parts
  feed disjoint sets of shards, hence of vertices. Each part lands in a Spark partition
  of its own and then in one block.
* **Time order.** Within a part, rows are sorted by ``(time, src, dst, kind, props...)``,
  so each vertex gets its updates in time order (what exact time cuts need) whatever the
  DataFrame's order, and rows tied on time are ordered by their content.
* **Stable ids.** A row's offset is its 1-based rank in its part in that order. The same
  data -- the same multiset of valid rows (as converted), whatever their order, in the
  same number of parts -- gives every row the same ``(part, offset)`` id again, so an
  ingest that is restarted or repeated applies each row once. Rows equal in every column
  used are interchangeable, so their relative order does not matter. The *fingerprint*
  (count and an order-independent hash sum of the valid rows) tells one data set from
  another under the same source name.

Types: integer id columns give ``int`` vertex ids, string ones ``str`` ids (``ids=`` forces
one); integer time columns keep ``int`` times, float, decimal and string times become
``float``, timestamps seconds since the epoch. Property columns must be numbers, strings
or booleans; a null property is left out of that row's properties.
"""

from __future__ import annotations

import hashlib
import re
import time as _time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import ray
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from shards.routing import shard_of
from vertex.columns import UpdateBatch
from vertex.records import EDGE_KINDS, Update, UpdateKind

__all__ = [
    "BadRow",
    "BlockLayout",
    "PreparedUpdates",
    "TableUnreadable",
    "UpdateColumns",
    "prepare_updates",
    "read_table",
]

IdType = Literal["int", "str"]
OnError = Literal["raise", "skip"]

# column names of the prepared frame; the ``_cr_`` prefix keeps them apart from the user's
_SRC, _DST, _TIME, _KIND, _PART, _KEY = (
    "_cr_src",
    "_cr_dst",
    "_cr_time",
    "_cr_kind",
    "_cr_part",
    "_cr_key",
)
_REASON, _MID, _FILE = "_cr_reason", "_cr_mid", "_cr_file"
_ROW_BITS = 33  # monotonically_increasing_id(): partition index << 33 | position in it
_BATCH_ROWS = 10_000  # rows turned into Python objects at a time by a source actor

_KINDS = ", ".join(k.value for k in UpdateKind)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_FRACTIONAL = (T.FloatType, T.DoubleType, T.DecimalType)
_PROP_TYPES = (*_INTEGRAL, T.FloatType, T.DoubleType, T.StringType, T.BooleanType)
_DECIMAL = r"^-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$"
_NONFINITE = r"(?i)^[+-]?(nan|inf|infinity)$"


class TableUnreadable(ValueError):
    """Spark could not read a table's files (a damaged or empty Parquet file, a file that
    is not of the format): one line naming the files and what Spark said."""


@dataclass(frozen=True)
class UpdateColumns:
    """Which columns of a DataFrame make an update.

    ``src``: the vertex an update goes to (an edge's source); ``dst``: an edge's target
    (``None``: no such column, for vertex updates only); ``time``: event time; ``kind``: a
    column of :class:`~vertex.records.UpdateKind` values (``None``: every row adds an
    edge); ``props``: ``(property name, column)`` pairs, the edge's properties (a vertex's
    for ``add_vertex``, a message's payload for ``message``); ``ids``: ``"int"`` or ``"str"``
    vertex ids whatever the columns' types (``None``: by the column type).
    """

    src: str
    dst: str | None
    time: str
    kind: str | None = None
    props: tuple[tuple[str, str], ...] = ()
    ids: IdType | None = None

    @classmethod
    def of(
        cls,
        src: str,
        dst: str | None,
        time: str,
        kind: str | None = None,
        props: Sequence[str] | Mapping[str, str] | None = None,
        ids: IdType | None = None,
    ) -> UpdateColumns:
        """``props`` as a list of columns (each its own property name) or a mapping
        ``{property name: column}``."""
        if isinstance(props, Mapping):
            pairs = tuple((str(k), str(v)) for k, v in props.items())
        else:
            pairs = tuple((str(c), str(c)) for c in props or ())
        if ids not in (None, "int", "str"):
            raise ValueError(f"ids must be 'int', 'str' or None, got {ids!r}")
        if dst is None and kind is None:
            raise ValueError("dst= names the edges' target column (only kind= rows can do without)")
        return cls(src, dst, time, kind, pairs, ids)

    def used(self) -> list[str]:
        """The DataFrame columns read, in the order rejects show them."""
        names = [self.src, self.dst, self.time, self.kind, *(c for _, c in self.props)]
        return list(dict.fromkeys(n for n in names if n is not None))


@dataclass(frozen=True)
class BadRow:
    """A rejected row: its 1-based position in the DataFrame, what is wrong with it, its
    fields as text (``col=value, ...``), and the file Spark read it from (``None``: a
    DataFrame not read from files)."""

    row: int
    reason: str
    text: str
    file: str | None = None


@dataclass(frozen=True)
class BlockLayout:
    """How a prepared block's columns make updates (one owner of the block format: the
    Spark side writes it, :meth:`updates` reads it in a source actor)."""

    dst: bool
    kind: bool
    props: tuple[str, ...]  # property names; their columns are _cr_p0, _cr_p1, ...

    @staticmethod
    def prop_column(i: int) -> str:
        """The block column of the ``i``-th property."""
        return f"_cr_p{i}"

    def updates(self, table: pa.Table, part: int, source: str) -> Iterator[Update]:
        """The updates of part ``part`` in ``table``, in its order, stamped ``(source,
        1..n)``: the rows' offsets are their ranks in the part."""
        if table.num_rows and pc.min_max(table[_PART]).as_py() != {"min": part, "max": part}:
            table = table.filter(pc.equal(table[_PART], part))
        names = self.props
        offset = 0
        for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
            n = batch.num_rows
            src = batch.column(_SRC).to_pylist()
            ts = batch.column(_TIME).to_pylist()
            dst = batch.column(_DST).to_pylist() if self.dst else [None] * n
            kinds = batch.column(_KIND).to_pylist() if self.kind else [UpdateKind.ADD_EDGE] * n
            values = [batch.column(self.prop_column(i)).to_pylist() for i in range(len(names))]
            pairs = list(zip(names, values, strict=True))
            for i in range(n):
                offset += 1
                props = {name: v[i] for name, v in pairs if v[i] is not None}
                yield Update(kinds[i], src[i], ts[i], dst[i], props, None, source, offset)

    def batches(self, table: pa.Table, part: int, source: str) -> Iterator[UpdateBatch | Update]:
        """:meth:`updates` with runs of rows as :class:`~vertex.columns.UpdateBatch` es, no
        Python object per row: the rows of a block batch whose columns say exactly what
        its updates say (edge additions with int ids, a numeric time, properties without
        nulls) go as columns; other block batches go row by row, as :meth:`updates`."""
        if table.num_rows and pc.min_max(table[_PART]).as_py() != {"min": part, "max": part}:
            table = table.filter(pc.equal(table[_PART], part))
        offset = 0
        for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
            n = batch.num_rows
            if n and self._as_columns(batch):
                positions = np.arange(offset + 1, offset + n + 1, dtype=np.int64)
                props = {
                    name: batch.column(self.prop_column(i)) for i, name in enumerate(self.props)
                }
                yield UpdateBatch.edges(
                    source,
                    batch.column(_SRC),
                    batch.column(_DST),
                    batch.column(_TIME),
                    positions,
                    props,
                )
            elif n:
                rows = self.updates(pa.Table.from_batches([batch]), part, source)
                yield from (u.with_origin(source, offset + k) for k, u in enumerate(rows, 1))
            offset += n

    def _as_columns(self, batch: pa.RecordBatch) -> bool:
        """Whether ``batch``'s rows are edge additions an :class:`UpdateBatch` holds as is."""
        if not self.dst or batch.column(_SRC).null_count or batch.column(_DST).null_count:
            return False
        if (
            self.kind
            and not pc.all(pc.equal(batch.column(_KIND), UpdateKind.ADD_EDGE.value)).as_py()
        ):
            return False
        ids = (batch.schema.field(_SRC).type, batch.schema.field(_DST).type)
        if not all(pa.types.is_int64(t) for t in ids):
            return False
        time = batch.schema.field(_TIME).type
        if not (pa.types.is_int64(time) or pa.types.is_float64(time)):
            return False
        return not any(batch.column(self.prop_column(i)).null_count for i in range(len(self.props)))


@dataclass
class PreparedUpdates:
    """A DataFrame prepared by :func:`prepare_updates`.

    ``blocks[part]``: the part's Arrow block in the object store (owned by this process:
    it must live until the parts are ingested), ``counts[part]`` its rows (parts without
    rows are left out). ``rows``: valid rows; ``rejected``: bad rows; ``first_bad``: the
    first bad row by position when ``on_error="raise"`` refused the data (then there are no
    blocks). Call :meth:`release` once the blocks were read.
    """

    parts: int
    layout: BlockLayout
    rows: int
    rejected: int
    fingerprint: str
    seconds: float
    blocks: dict[int, ray.ObjectRef] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    first_bad: BadRow | None = None
    _frames: list[DataFrame] = field(default_factory=list, repr=False)

    def release(self) -> None:
        """Free Spark's cached copies (the blocks stay while referenced)."""
        from raydp.spark.dataset import release_spark_recoverable

        for frame in self._frames:
            release_spark_recoverable(frame)
        self._frames.clear()


def read_table(
    spark: Any, path: str, fmt: Literal["parquet", "csv"], header: bool = True
) -> DataFrame:
    """A Parquet file or directory, or CSV file(s), as a DataFrame. CSV columns are named
    by the header line (else ``_c0``, ``_c1``...) and typed by Spark's inference (a column
    with a value that is not a number stays text, and is checked as such). A file Spark
    cannot read, or one without columns (empty), raises :class:`TableUnreadable`."""
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"unknown table format {fmt!r}; expected 'parquet' or 'csv'")
    try:
        if fmt == "parquet":
            frame = spark.read.parquet(path)
        else:
            frame = spark.read.csv(path, header=header, inferSchema=True)
    except Exception as exc:
        said = _spark_said(exc)
        raise TableUnreadable(f"{path}: Spark cannot read it as {fmt}: {said}") from None
    if not frame.columns:
        raise TableUnreadable(f"{path}: no columns in it as {fmt} (an empty file?)")
    return frame


def _spark_said(error: BaseException) -> str:
    """What Spark (or the JVM under it) said, in one line: the root cause (the last
    ``Caused by:`` with a message) if the error has a Java stack, else its first line;
    without the stack and the exception class names."""
    lines = [line.strip().removeprefix(": ").strip() for line in str(error).splitlines()]
    causes = [_unwrapped(line) for line in lines if line.startswith("Caused by: ")]
    causes = [c for c in causes if c and "Exception thrown in awaitResult" not in c]
    if causes:
        return causes[-1][:300]
    for line in lines:
        if not line or line.startswith(("An error occurred while calling", "at ", "py4j")):
            continue
        return _unwrapped(line)[:300]
    return type(error).__name__


def _unwrapped(line: str) -> str:
    while (found := _JAVA_ERROR.match(line)) is not None:
        line = found.group(1)
    return line.strip()


_JAVA_ERROR = re.compile(r"^(?:Caused by: )?[\w.$]+(?:Exception|Error): (.*)$")


def _files_of(frame: DataFrame) -> str:
    """The files ``frame`` is read from, for errors (``"the DataFrame"`` if none)."""
    try:
        files = [_local(f) for f in frame.inputFiles()]
    except Exception:
        files = []
    if not files:
        return "the DataFrame"
    return files[0] if len(files) == 1 else f"{files[0]} (and {len(files) - 1} more files)"


def _local(uri: str) -> str:
    """A ``file:`` URI as a path (others as given)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prepare_updates(
    frame: DataFrame,
    columns: UpdateColumns,
    *,
    num_shards: int,
    parts: int,
    source: str,
    on_error: OnError = "raise",
    rejects: str | None = None,
) -> PreparedUpdates:
    """Check ``frame``'s rows, and unless ``on_error="raise"`` found bad ones, put the
    valid rows as ``parts`` time-ordered blocks into the Ray object store (see the module
    doc). A column that is missing or of a type that cannot make an update raises
    ``ValueError`` before Spark runs anything."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if not 1 <= parts <= num_shards:
        raise ValueError(f"parts must be between 1 and the shard count {num_shards}, got {parts}")
    started = _time.perf_counter()
    layout = BlockLayout(
        columns.dst is not None, columns.kind is not None, tuple(n for n, _ in columns.props)
    )
    try:
        checked = _checked(frame, columns).persist()  # validated once, fed from the same rows
    except ValueError as exc:
        raise ValueError(f"{_files_of(frame)}: {exc}") from None
    valid = F.col(_REASON).isNull()
    content = F.xxhash64(*_content(layout))
    try:
        totals = checked.agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(_REASON).alias("bad"),
            F.sum(F.when(valid, F.pmod(content, F.lit(2**31 - 1)))).alias("hashes"),
        ).first()
    except Exception as exc:  # the files could not be read (nothing moved yet)
        checked.unpersist()
        raise TableUnreadable(
            f"{_files_of(frame)}: Spark could not read the rows: {_spark_said(exc)}; nothing "
            "ingested"
        ) from None
    bad, rows = totals["bad"], totals["rows"] - totals["bad"]
    digest = hashlib.blake2b(f"{rows}:{totals['hashes']}".encode(), digest_size=4).hexdigest()
    prepared = PreparedUpdates(parts, layout, rows, bad, digest, 0.0)
    try:
        if bad and on_error == "raise":
            prepared.first_bad = _first_bad(checked, columns)
        else:
            if bad and rejects is not None:
                _write_rejects(checked, columns, source, rejects)
            if rows:
                _hand_over(prepared, checked.filter(valid), layout, num_shards)
    except BaseException:
        prepared.release()
        raise
    finally:
        checked.unpersist()  # the hand-over cached what the blocks are made of
    prepared.seconds = _time.perf_counter() - started
    return prepared


# -- checking ---------------------------------------------------------------------------


def _col(name: str) -> Column:
    """A column by its exact name (dots and other characters taken literally)."""
    return F.col("`" + name.replace("`", "``") + "`")


def _quoted(prefix: str | Column, value: Column) -> Column:
    """``prefix: 'value'``, the way file sources quote a bad field."""
    head = F.lit(prefix) if isinstance(prefix, str) else prefix
    return F.concat(head, F.lit(": '"), value.cast("string"), F.lit("'"))


def _type_of(frame: DataFrame, name: str) -> T.DataType:
    if name not in frame.columns:
        raise ValueError(
            f"no column {name!r} in the DataFrame (columns: {', '.join(frame.columns)})"
        )
    return frame.schema[name].dataType


def _id(frame: DataFrame, name: str, ids: IdType | None, what: str) -> tuple[Column, Column]:
    """``(id value, reason or null)`` of the id column ``name``; a null id is judged by the
    caller (a null target is right for a vertex update)."""
    dtype = _type_of(frame, name)
    raw = _col(name)
    fine = F.lit(None).cast("string")
    if isinstance(dtype, _INTEGRAL):
        return (raw.cast("string") if ids == "str" else raw.cast("long")), fine
    if isinstance(dtype, T.DecimalType) and dtype.scale == 0:  # e.g. CSV ids past 64 bits
        if ids == "str":
            return raw.cast("string"), fine
        parsed = _try_cast(name, "BIGINT")
        beyond = raw.isNotNull() & parsed.isNull()
        return parsed, F.when(beyond, _quoted(f"{what} id is out of the 64-bit range", raw))
    if not isinstance(dtype, T.StringType):
        raise ValueError(
            f"column {name!r} is {dtype.simpleString()}: vertex ids are integers or strings"
        )
    if ids != "int":
        return raw, fine
    parsed = _try_cast(name, "BIGINT")
    problem = F.when(
        raw.isNotNull() & ~raw.rlike(r"^-?[0-9]+$"), _quoted(f"{what} id is not an integer", raw)
    ).when(raw.isNotNull() & parsed.isNull(), _quoted(f"{what} id is out of the 64-bit range", raw))
    return parsed, problem


def _try_cast(name: str, sql_type: str) -> Column:
    """``name`` cast to ``sql_type``, null where it does not convert (in ANSI mode too)."""
    return F.expr(f"try_cast(`{name.replace('`', '``')}` AS {sql_type})")


def _event_time(frame: DataFrame, name: str) -> tuple[Column, Column]:
    """``(time value, reason or null)`` of the time column ``name``."""
    dtype = _type_of(frame, name)
    raw = _col(name)
    problem = F.when(raw.isNull(), F.lit("time is null"))
    if isinstance(dtype, _INTEGRAL):
        return raw.cast("long"), problem.when(raw < 0, _quoted("negative time", raw))
    if isinstance(dtype, (*_FRACTIONAL, T.TimestampType)):
        value = raw.cast("double")
    elif isinstance(dtype, T.StringType):
        value = _try_cast(name, "DOUBLE")
        problem = problem.when(raw.rlike(_NONFINITE), _quoted("time is not finite", raw))
        problem = problem.when(~raw.rlike(_DECIMAL), _quoted("time is not a number", raw))
    else:
        raise ValueError(
            f"column {name!r} is {dtype.simpleString()}: times are numbers, numeric text or "
            "timestamps"
        )
    infinite = F.isnan(value) | value.isin(float("inf"), float("-inf"))
    problem = problem.when(infinite, _quoted("time is not finite", raw))
    return value, problem.when(value < 0, _quoted("negative time", raw))


def _kind(frame: DataFrame, columns: UpdateColumns) -> tuple[Column, Column]:
    """``(kind value, reason or null)``: the kind column's (and whether the row has a target
    exactly when its kind takes one), else add_edge for every row (which needs a target)."""
    target = None if columns.dst is None else _col(columns.dst)
    if columns.kind is None:
        assert target is not None  # UpdateColumns.of refuses edges without targets
        return F.lit(UpdateKind.ADD_EDGE.value), F.when(target.isNull(), "target id is null")
    name = columns.kind
    dtype = _type_of(frame, name)
    if not isinstance(dtype, T.StringType):
        raise ValueError(f"column {name!r} is {dtype.simpleString()}: kinds are text ({_KINDS})")
    raw = _col(name)
    edge = raw.isin(*(k.value for k in EDGE_KINDS))
    problem = F.when(raw.isNull(), F.lit("kind is null")).when(
        ~raw.isin(*(k.value for k in UpdateKind)),
        F.concat(F.lit("unknown kind '"), raw, F.lit(f"' (expected one of {_KINDS})")),
    )
    if target is None:
        return raw, problem.when(edge, F.concat(raw, F.lit(" needs a target id: no dst column")))
    problem = problem.when(edge & target.isNull(), F.lit("target id is null"))
    problem = problem.when(
        ~edge & target.isNotNull(), _quoted(F.concat(raw, F.lit(" takes no target id")), target)
    )
    return raw, problem


def _checked(frame: DataFrame, columns: UpdateColumns) -> DataFrame:
    """The rows as converted values, each with the first reason it is bad (or null), its
    position tag and, for bad rows only, the raw fields of the columns used (what is
    cached stays narrow)."""
    src, src_problem = _id(frame, columns.src, columns.ids, "source")
    kind, kind_problem = _kind(frame, columns)
    ts, time_problem = _event_time(frame, columns.time)
    checks = [F.when(_col(columns.src).isNull(), "source id is null"), src_problem, kind_problem]
    selected = [F.monotonically_increasing_id().alias(_MID), src.alias(_SRC), ts.alias(_TIME)]
    if columns.kind is not None:
        selected.append(kind.alias(_KIND))
    if columns.dst is not None:
        dst, dst_problem = _id(frame, columns.dst, columns.ids, "target")
        selected.append(dst.alias(_DST))
        checks.append(dst_problem)
    checks.append(time_problem)
    for i, (prop, name) in enumerate(columns.props):
        dtype = _type_of(frame, name)
        if not isinstance(dtype, _PROP_TYPES):
            raise ValueError(
                f"column {name!r} (property {prop!r}) is {dtype.simpleString()}: properties "
                "are numbers, strings or booleans"
            )
        selected.append(_col(name).alias(BlockLayout.prop_column(i)))
    reason = F.coalesce(*checks)
    selected.append(reason.alias(_REASON))
    bad = reason.isNotNull()
    selected += [F.when(bad, _col(n)).alias(_raw(i)) for i, n in enumerate(columns.used())]
    selected.append(F.when(bad, F.input_file_name()).alias(_FILE))
    return frame.select(*selected)


def _raw(i: int) -> str:
    """The checked frame's copy of the ``i``-th column used, as given (for rejects)."""
    return f"_cr_raw_{i}"


def _content(layout: BlockLayout) -> list[str]:
    """The converted columns that make an update: the time first, then the rest (the
    order within a part, and what the fingerprint hashes)."""
    names = [_TIME, _SRC, *([_DST] if layout.dst else []), *([_KIND] if layout.kind else [])]
    return names + [BlockLayout.prop_column(i) for i in range(len(layout.props))]


def _positioned(checked: DataFrame) -> DataFrame:
    """The bad rows with their 1-based position in the DataFrame (``row``)."""
    partition = F.shiftright(F.col(_MID), _ROW_BITS)
    counts = checked.groupBy(partition.alias("p")).count().collect()
    before, total = {}, 0
    for r in sorted(counts, key=lambda r: r["p"]):
        before[r["p"]] = total
        total += r["count"]
    first = F.create_map(*(F.lit(x).cast("long") for p, n in before.items() for x in (p, n)))
    within = F.col(_MID).bitwiseAND(F.lit((1 << _ROW_BITS) - 1))
    row = first[partition] + within + 1
    return checked.filter(F.col(_REASON).isNotNull()).withColumn("row", row)


def _first_bad(checked: DataFrame, columns: UpdateColumns) -> BadRow:
    used = columns.used()
    found = _positioned(checked).orderBy("row").first()
    text = ", ".join(f"{n}={found[_raw(i)]!r}" for i, n in enumerate(used))
    return BadRow(found["row"], found[_REASON], text, _local(found[_FILE] or "") or None)


def _write_rejects(checked: DataFrame, columns: UpdateColumns, source: str, path: str) -> None:
    """Append the bad rows to the Parquet table at ``path``."""
    raw = [F.col(_raw(i)).cast("string").alias(n) for i, n in enumerate(columns.used())]
    bad = _positioned(checked).select(
        F.lit(source).alias("source"), "row", F.col(_REASON).alias("reason"), *raw
    )
    bad.orderBy("row").write.mode("append").parquet(path)


# -- parts and the hand-over -------------------------------------------------------------


@F.pandas_udf(T.IntegerType())  # type: ignore[call-overload, misc]
def _part_of(ids: pd.Series, num_shards: pd.Series, parts: pd.Series) -> pd.Series:
    """``shard_of(id, num_shards) % parts`` per row (the graph's own hash function)."""
    if ids.empty:
        return pd.Series([], dtype="int32")
    n, p = int(num_shards.iloc[0]), int(parts.iloc[0])
    return pd.Series([shard_of(v, n) % p for v in ids.tolist()], dtype="int32")


_landing: dict[int, list[int]] = {}


def _landing_keys(spark: Any, parts: int) -> list[int]:
    """For each part, an int that Spark's hash partitioning into ``parts`` partitions sends
    to the partition of that number: partitioning by these keys gives every part its own
    partition, and so its own block (Spark's hash, murmur3 with seed 42, is the SQL
    ``hash`` and is fixed)."""
    if parts not in _landing:
        candidates = spark.range(0, 64 * parts).select(F.col("id").cast("int").alias("k"))
        rows = candidates.select("k", F.pmod(F.hash("k"), F.lit(parts)).alias("p")).collect()
        first: dict[int, int] = {}
        for r in rows:
            first.setdefault(r["p"], r["k"])
        if len(first) < parts:
            raise RuntimeError(f"no key found for every one of {parts} Spark partitions")
        _landing[parts] = [first[p] for p in range(parts)]
    return _landing[parts]


@ray.remote(num_cpus=0)
def _parts_in(table: pa.Table) -> dict[int, int]:
    """Rows per part of one block."""
    counts = pc.value_counts(table[_PART]) if table.num_rows else []
    return {c["values"].as_py(): c["counts"].as_py() for c in counts}


def _hand_over(
    prepared: PreparedUpdates, valid: DataFrame, layout: BlockLayout, num_shards: int
) -> None:
    """Part, order and move the valid rows into the object store, one block per part."""
    from raydp.spark.dataset import from_spark_recoverable

    parts = prepared.parts
    keys = _landing_keys(valid.sparkSession, parts)
    part = _part_of(F.col(_SRC), F.lit(num_shards), F.lit(parts))
    ordered = (
        valid.withColumn(_PART, part)
        .withColumn(_KEY, F.element_at(F.array(*map(F.lit, keys)), F.col(_PART) + 1))
        .repartition(parts, _KEY)
        .sortWithinPartitions(_PART, *_content(layout))
        .select(_PART, *_content(layout))
    )
    refs = from_spark_recoverable(ordered).to_arrow_refs()
    prepared._frames.append(ordered)
    for ref, counts in zip(refs, ray.get([_parts_in.remote(r) for r in refs]), strict=True):
        for p, n in counts.items():
            if p in prepared.blocks:  # one partition per part, by construction
                raise RuntimeError(f"part {p} was split over several blocks")
            prepared.blocks[p], prepared.counts[p] = ref, n
