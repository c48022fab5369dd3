"""Graph algorithms on snapshots, written on the processing models of
:mod:`snapshot.models`; each module has a doctested example."""

from snapshot.algorithms.clustering import clustering
from snapshot.algorithms.components import component_sets, connected_components
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
    "clustering",
    "component_sets",
    "connected_components",
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
]
