"""Graph algorithms on snapshots. Each has one public name and several implementations
(:mod:`.engine`): a vectorized kernel over the snapshot's Arrow columns, and (most of
them) programs on the processing models of :mod:`snapshot.models`, which stay as the
models' worked examples; each module has a doctested example."""

from snapshot.algorithms.activity import activity
from snapshot.algorithms.clustering import clustering, triangles
from snapshot.algorithms.components import (
    component_sets,
    connected_components,
    strongly_connected_components,
)
from snapshot.algorithms.degrees import degree_distribution, degrees
from snapshot.algorithms.engine import EngineChoice, choose_engine
from snapshot.algorithms.followers import (
    follower_histogram,
    in_degrees,
    max_followers_replay,
    max_in_degree_series,
    new_followers,
)
from snapshot.algorithms.pagerank import pagerank, pagerank_job, pagerank_shift
from snapshot.algorithms.shortest_paths import distances, shortest_paths

__all__ = [
    "EngineChoice",
    "activity",
    "choose_engine",
    "clustering",
    "component_sets",
    "connected_components",
    "degree_distribution",
    "degrees",
    "distances",
    "follower_histogram",
    "in_degrees",
    "max_followers_replay",
    "max_in_degree_series",
    "new_followers",
    "pagerank",
    "pagerank_job",
    "pagerank_shift",
    "shortest_paths",
    "strongly_connected_components",
    "triangles",
]
