"""Live algorithms shipped with chronoray, one module each."""

from ephemeral.algorithms.bfs import BfsDepth
from ephemeral.algorithms.degree_histogram import DegreeHistogram
from ephemeral.algorithms.pagerank import LivePageRank
from ephemeral.algorithms.wcc import WeaklyConnectedComponents

__all__ = ["BfsDepth", "DegreeHistogram", "LivePageRank", "WeaklyConnectedComponents"]
