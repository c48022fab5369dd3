"""What a shard process imports to run and log column runs: neither pandas (pyarrow would
import it before its first array from numpy; the logged columns share numpy's buffers
instead) nor scipy (numba's BLAS check, held back while numba loads, see
:func:`shards.temporal._import_numba`) -- a third of a shard's CPU on a 600 k-event
stream went to those imports. Each case runs in a fresh process: imports are per
process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_INGEST = """
    import sys
    import numpy as np
    import shards.core
    shards.core.TEMPORAL_AFTER = 0  # the temporal columns (and numba) from the first row
    from shards.codec import EdgeRun, decode_events
    from shards.core import Batch, ShardCore
    from shards.logstore import LogName, MemoryLogStore
    from vertex import TemporalVertex
    from vertex.model import VertexTypes

    n = 2_000
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 300, n), rng.integers(0, 300, n)
    rows, half = np.repeat(np.arange(n), 2), np.tile(np.array([0, 1], np.int8), n)
    run = EdgeRun(np.arange(1, n + 1)[rows], half, np.where(half == 0, src[rows], dst[rows]),
                  np.where(half == 0, dst[rows], src[rows]), np.arange(n)[rows], None)
    store = MemoryLogStore("imports")
    core = ShardCore(0, 1, store, VertexTypes([TemporalVertex]))
    core.handle(Batch("src:s", 0, [], None, None, True, run))
    blocks = [decode_events(v) for _, v in store.scan(LogName.EVENTS, 1)]
    assert core.worker_clock == 2 * n and sum(len(b.vertex) for b in blocks) == 2 * n
    # MORE
    print("numba" in sys.modules, "pandas" in sys.modules, "scipy" in sys.modules)
"""


def _run(after: str = "") -> str:
    code = textwrap.dedent(_INGEST).replace("# MORE", textwrap.dedent(after).strip())
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_shard_runs_and_logs_columns_without_pandas_or_scipy() -> None:
    assert _run() == "True False False"


def test_numba_code_that_needs_blas_still_compiles_after_the_shard_loaded_numba() -> None:
    """scipy is held back only while numba loads: a user's compiled ``np.dot`` later in
    the same process imports it as usual, and computes."""
    out = _run("""
        import numba
        dot = numba.njit(lambda a, b: np.dot(a, b))
        assert dot(np.ones(3), np.arange(3.0)) == 3.0
    """)
    assert out == "True False True"
