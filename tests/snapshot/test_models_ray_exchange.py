"""Pregel on Ray's direct exchange: the partition actors run windows of supersteps on
their own and pass each superstep's messages and summaries to each other over their
own connections. Real Ray actors (pooled), small graphs where partitions receive nothing
in some supersteps, pause/resume across windows, a failing program, and both program
forms on CollegeMsg against networkx."""

from __future__ import annotations

import numpy as np
import pytest
from models_data import CHAIN, nx_pagerank, relay_program, tables

from snapshot.models import PregelArrays, PregelJob, PregelProgram, pregel

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.mark.parametrize("window", [1, 3, None])
def test_partitions_without_messages_halting_and_the_end_on_ray(ray_session, window):
    """4 partitions for 4 vertices: each superstep at most one partition gets the token;
    the job ends when all halted and nothing was sent, whatever the window."""
    for parts in (1, 4):
        result = pregel(CHAIN, relay_program(), num_partitions=parts, executor="ray", window=window)
        assert result.to_dict() == {1: 0, 2: 1, 3: 1, 4: 1}
        assert result.info["supersteps"] == 4 and result.info["finished"]
        assert [s["messages"] for s in result.steps] == [2, 1, 1, 0]
        assert [s["active"] for s in result.steps] == [0, 0, 0, 0]
        assert [s["dropped"] for s in result.steps] == [0, 1, 0, 0]


def test_pause_and_resume_keep_the_messages_in_the_actors(ray_session):
    """Messages sent in the last superstep of a run stay with the actors and are
    delivered when the job resumes; the result equals an uninterrupted run."""
    from snapshot.algorithms.pagerank import pagerank_arrays

    graph = tables("college")
    whole = pregel(graph, pagerank_arrays(), num_partitions=3, executor="ray")
    with PregelJob(graph, pagerank_arrays(), num_partitions=3, executor="ray") as job:
        paused = job.run(supersteps=7)
        assert not paused.info["finished"] and paused.info["supersteps"] == 7
        done = job.run()
    assert done.info["supersteps"] == whole.info["supersteps"]
    assert done.to_dict("rank") == whole.to_dict("rank")


def test_a_failing_partition_fails_the_job_and_the_pool_still_works(ray_session):
    """A program that raises on one partition fails the job (the others do not wait
    forever), and the pooled actors then run the next job correctly."""

    def compute(batch):
        if batch.superstep == 2 and (batch.ids == 3).any():
            raise ValueError("vertex 3 refuses")
        batch.send_to_neighbors(np.ones(len(batch)))
        return {"x": batch.state["x"] + 1}

    failing = PregelArrays(compute, init=lambda t: {"x": np.zeros(len(t.ids))}, max_supersteps=6)
    with pytest.raises(Exception, match="vertex 3 refuses"):
        pregel(CHAIN, failing, num_partitions=3, executor="ray")
    result = pregel(CHAIN, relay_program(), num_partitions=3, executor="ray")
    assert result.to_dict() == {1: 0, 2: 1, 3: 1, 4: 1}
    assert [s["messages"] for s in result.steps] == [2, 1, 1, 0]


def test_both_forms_on_ray_equal_each_other_and_networkx(ray_session):
    """PageRank as the array program and as the per-vertex program on Ray (2
    partitions): the same supersteps and message counts, ranks within 1e-12 of each
    other and 1e-6 of networkx (CollegeMsg)."""
    from snapshot.algorithms.pagerank import pagerank_arrays, pagerank_program

    graph = tables("college")
    arrays = pregel(graph, pagerank_arrays(), num_partitions=2, executor="ray")
    vertex = pregel(graph, pagerank_program(), num_partitions=2, executor="ray")
    assert isinstance(pagerank_program(), PregelProgram)
    assert arrays.info["supersteps"] == vertex.info["supersteps"]
    assert [s["messages"] for s in arrays.steps] == [s["messages"] for s in vertex.steps]
    a, v, expected = arrays.to_dict("rank"), vertex.to_dict("rank"), nx_pagerank("college")
    assert a.keys() == v.keys() == expected.keys()
    assert max(abs(a[k] - v[k]) for k in v) < 1e-12
    assert max(abs(a[k] - expected[k]) for k in expected) < 1e-6


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_setup_reads_the_counts_in_the_call_that_builds_the_workers(ray_session, executor):
    """``then="counts"``: every worker's counts come back with the call that builds it
    (one actor call per partition on Ray), equal to asking afterwards and summing to the
    graph's vertices and edges; without ``then`` nothing is read."""
    from snapshot.algorithms.pagerank import pagerank_arrays
    from snapshot.models.runtime import start_group

    graph, program = tables("college"), pagerank_arrays()
    group = start_group(graph, 2, program.worker, program, executor=executor, then="counts")
    try:
        assert group.loaded == group.call("counts")
        assert sum(c[0] for c in group.loaded) == graph[0].num_rows
        assert sum(c[1] for c in group.loaded) == graph[1].num_rows
    finally:
        group.close()
    plain = start_group(graph, 2, program.worker, program, executor=executor)
    try:
        assert plain.loaded == []
    finally:
        plain.close()
