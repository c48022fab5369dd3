"""pyarrow without pandas (:mod:`vertex.arrow_pandas`): a process that hands pyarrow only
Python values builds and writes tables without importing pandas, and reads nanosecond
times as a process with pandas does. Each case runs in a fresh process: the switch holds
for a whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa

from vertex.arrow_pandas import nanosecond_values


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_tables_of_python_values_are_built_and_written_without_pandas(tmp_path) -> None:
    out = _run(f"""
        import sys
        import pyarrow as pa, pyarrow.parquet as pq
        from vertex.arrow_pandas import pyarrow_without_pandas
        assert pyarrow_without_pandas()
        s = pa.array(["a", None], pa.string())
        table = pa.table({{"id": pa.array([1, 2], pa.int64()), "s": s}})
        pq.write_table(pa.concat_tables([table, table]), {str(tmp_path / "t.parquet")!r})
        print("pandas" in sys.modules, pq.read_table({str(tmp_path / "t.parquet")!r}).to_pylist())
    """)
    rows = "{'id': 1, 's': 'a'}, {'id': 2, 's': None}"
    assert out == f"False [{rows}, {rows}]"


def test_nanosecond_times_read_the_same_without_pandas() -> None:
    code = """
        import sys
        import numpy as np
        import pyarrow as pa
        from vertex.arrow_pandas import pyarrow_without_pandas
        from vertex.columns import struct_dicts
        ns = np.array([1_000_000_001, 5], dtype=np.int64)
        def column(arrow_type):
            return pa.Array.from_buffers(arrow_type, 2, [None, pa.py_buffer(ns)])
        props = pa.StructArray.from_arrays(
            [column(pa.timestamp("ns")), column(pa.duration("ns"))], ["t", "d"]
        )
        SWITCH
        print([{k: repr(v) for k, v in row.items()} for row in struct_dicts(props)])
    """
    with_pandas = _run(code.replace("SWITCH", "import pandas"))
    without = _run(code.replace("SWITCH", "assert pyarrow_without_pandas()"))
    assert without == with_pandas and "Timestamp(" in without and "Timedelta(" in without


def test_pandas_comes_back() -> None:
    out = _run("""
        import pyarrow as pa
        from vertex.arrow_pandas import pyarrow_with_pandas, pyarrow_without_pandas
        assert pyarrow_without_pandas()
        pa.array([1])
        pyarrow_with_pandas()
        import pandas as pd
        table = pa.Table.from_pandas(pd.DataFrame({"c": pd.Categorical(["x", "y"])}))
        print(table.schema.field("c").type, pa.array(pd.Series([1, None])).null_count)
    """)
    assert out == "dictionary<values=string, indices=int8, ordered=0> 1"


def test_already_imported_pandas_is_kept() -> None:
    assert (
        _run("""
        import pandas, pyarrow
        from vertex.arrow_pandas import pyarrow_without_pandas
        print(pyarrow_without_pandas())
    """)
        == "False"
    )


def test_nanosecond_values_are_found_at_any_depth() -> None:
    assert nanosecond_values(pa.list_(pa.struct([("d", pa.duration("ns"))])))
    assert nanosecond_values(pa.dictionary(pa.int8(), pa.timestamp("ns", "UTC")))
    assert not nanosecond_values(pa.struct([("t", pa.timestamp("us")), ("w", pa.float64())]))
