"""Fixtures for every test and doctest: one Ray instance and one Spark session per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import DoctestItem

_SPARK_DOCS = Path(__file__).parent / "spark_bridge"
# The default suite's files that start a Spark session in the test process (the ``spark``
# fixture, or a Spark analysis): ``./run test`` runs them on one pytest-xdist worker, one
# after the other (see :func:`pytest_xdist_make_scheduler`); collection refuses a default
# test elsewhere that uses the fixture.
SPARK_FILES = frozenset(
    {
        "tests/spark_bridge/test_analyses.py",
        "tests/spark_bridge/test_spark_ingest.py",
        "tests/spark_bridge/test_bridge.py",
        "tests/gateway/test_gateway_queries.py",
        "tests/chronoray/test_demo.py",  # the demo's Spark PageRank, not through the fixture
    }
)


@pytest.fixture(scope="session")
def ray_session():
    """One small local Ray instance for every Ray test of the session, shut down at the end."""
    import ray

    from chronoray.connect import LOCAL_SYSTEM_CONFIG

    ray.init(
        address="local",  # never a cluster left running by something else
        num_cpus=2,
        object_store_memory=128 * 1024 * 1024,
        include_dashboard=False,
        namespace="chronoray",
        log_to_driver=False,
        _system_config=LOCAL_SYSTEM_CONFIG,  # snapshot tasks reuse their workers
    )
    yield ray
    from spark_bridge import stop_spark

    stop_spark()  # a session started by a test outside the ``spark`` fixture
    ray.shutdown()


@pytest.fixture(scope="session")
def spark(ray_session):
    """The RayDP Spark session on the session's Ray instance (started once: ~10 s)."""
    from spark_bridge import spark_session, stop_spark

    yield spark_session()
    stop_spark()


def pytest_configure(config: pytest.Config) -> None:
    """RayDP 1.6.5 reads ``DataFrame.sql_ctx`` (deprecated since pyspark 3.3) on every
    hand-over; :mod:`spark_bridge.convert` silences that for users, but pytest resets the
    warning filters around each test, so the suite's summary would list it hundreds of
    times."""
    config.addinivalue_line("filterwarnings", "ignore:DataFrame.sql_ctx:UserWarning")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadfile``: whole files per worker as usual, except that the files of
    :data:`SPARK_FILES` are one unit of work. So one worker starts one Spark session (a
    JVM: ~17-25 s to start, its JIT warmed once) and runs every Spark test on it, while
    the other runs Ray tests, instead of both workers starting and warming their own."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkFilesTogether(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "spark files" if path in SPARK_FILES else path

    return SparkFilesTogether(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Spark examples in ``spark_bridge``'s docstrings are in the long set (a Spark job
    each, ~2.5 min together; ``tests/spark_bridge/test_analyses.py`` checks the same
    analyses against networkx in the default suite). Then the files are put heaviest
    first (see :func:`_weight`): ``./run test`` hands pytest-xdist whole files in this
    order (``--no-loadscope-reorder``), so the last minutes are short files shared by both
    workers, not one long Ray or Spark file on one worker while the other waits."""
    for item in items:
        if isinstance(item, DoctestItem) and _spark_example(item):
            item.add_marker(pytest.mark.long)
        _check_spark_file(item)
    weight: dict[Path, int] = {}
    for item in items:
        weight[item.path] = min(weight.get(item.path, 2), _weight(item))
    first = {path: k for k, path in enumerate(weight)}
    items.sort(key=lambda item: (weight[item.path], first[item.path]))  # stable: in file order


def _weight(item: pytest.Item) -> int:
    """0: a slow test (a Spark session, a Ray cluster of its own, a subprocess CLI); 1: a
    test on the session's Ray; 2: the rest (milliseconds to seconds)."""
    if item.get_closest_marker("slow"):
        return 0
    return 1 if item.get_closest_marker("ray") else 2


def _check_spark_file(item: pytest.Item) -> None:
    """A default test that starts Spark through the ``spark`` fixture is in a file of
    :data:`SPARK_FILES` (else two workers would start two sessions at once)."""
    uses = "spark" in getattr(item, "fixturenames", ()) and "spark" not in getattr(
        getattr(item, "callspec", None), "params", {}
    )
    if uses and not item.get_closest_marker("long"):
        path = item.path.relative_to(Path(__file__).parent).as_posix()
        if path not in SPARK_FILES:
            raise pytest.UsageError(f"{item.nodeid} uses Spark: add {path} to SPARK_FILES")


def _spark_example(item: DoctestItem) -> bool:
    return _SPARK_DOCS in item.path.parents and any(
        "spark" in example.source for example in item.dtest.examples
    )


@pytest.fixture(autouse=True)
def _spark_in_doctests(request, doctest_namespace):
    """Doctests of ``spark_bridge`` run their examples on the real session as ``spark``."""
    if isinstance(request.node, DoctestItem) and _SPARK_DOCS in request.node.path.parents:
        doctest_namespace["spark"] = request.getfixturevalue("spark")
