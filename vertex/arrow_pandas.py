"""pyarrow's pandas support, left out of a process that hands pyarrow no pandas objects.

pyarrow imports pandas the first time it builds or converts almost any array (to check
whether its input is a pandas object: ``pa.array([1])`` alone costs 0.3-0.4 s on this
VM), whether or not the process ever holds one. :func:`pyarrow_without_pandas` tells it
pandas is absent instead, for a command's own process that builds tables from Python
values only (``chronoray snapshot`` on a stopped graph); :func:`pyarrow_with_pandas`
gives it pandas back. The one thing pyarrow does differently without pandas for values a
chronoray log holds is to turn nanosecond times and durations into ``datetime`` /
``timedelta`` instead of pandas ``Timestamp`` / ``Timedelta``:
:func:`~vertex.columns.struct_dicts` (the one reading of a ``props`` column) gives pandas
back before it reads such a column, so what is read is the same either way. pyarrow's
inference of a Python list's type (``pa.array(values)`` without a type) imports pandas by
itself, whatever it was told: what must not import it gives its arrays a type.

This reaches into pyarrow's private pandas shim (``pyarrow.lib._pandas_api``); a pyarrow
without it keeps its own behaviour (the functions then do nothing).
"""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa

from vertex.annotations import mark_module_api
from vertex.held_back import held_back

__all__ = ["nanosecond_values", "pyarrow_with_pandas", "pyarrow_without_pandas"]


def _shim() -> Any:
    return getattr(pa.lib, "_pandas_api", None)


def pyarrow_without_pandas() -> bool:
    """Have pyarrow take pandas as absent in this whole process until
    :func:`pyarrow_with_pandas` (or a pyarrow call that needs pandas, such as
    ``to_pandas()``, which imports it then). Only for a process that passes pyarrow no
    pandas objects while it lasts: pyarrow does not recognise them in between. Returns
    whether it did (not when pandas is imported already, or pyarrow already looked)."""
    shim = _shim()
    if shim is None or "pandas" in sys.modules:
        return False
    with held_back("pandas"):
        return not shim.have_pandas  # pyarrow looks for pandas once, and remembers


def pyarrow_with_pandas() -> None:
    """Give pyarrow its pandas support back (importing pandas) if
    :func:`pyarrow_without_pandas` took it away; nothing otherwise."""
    shim = _shim()
    if shim is not None and "pandas" not in sys.modules:
        shim.pd  # noqa: B018 -- reading it makes pyarrow import pandas and use it again


def nanosecond_values(arrow_type: pa.DataType) -> bool:
    """Whether values of ``arrow_type`` hold nanosecond times or durations (those pyarrow
    turns into pandas values when it has pandas), at any depth.

    >>> nanosecond_values(pa.struct([("t", pa.timestamp("ns")), ("n", pa.int64())]))
    True
    >>> nanosecond_values(pa.list_(pa.timestamp("us")))
    False
    """
    if pa.types.is_timestamp(arrow_type) or pa.types.is_duration(arrow_type):
        return bool(arrow_type.unit == "ns")
    if pa.types.is_dictionary(arrow_type):
        return nanosecond_values(arrow_type.value_type)
    return any(nanosecond_values(arrow_type.field(i).type) for i in range(arrow_type.num_fields))


mark_module_api(globals())
