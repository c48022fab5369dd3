"""Graph analyses written with Spark DataFrame operations (GraphFrames' jar is not needed).

Each takes a Spark session and a :class:`~snapshot.Snapshot` (or ``(vertices, edges)``
DataFrames) and returns a Spark DataFrame; definitions match networkx's, stated per module.
"""

from spark_bridge.analyses.activity import activity
from spark_bridge.analyses.degrees import degree_distribution, degrees
from spark_bridge.analyses.pagerank import PageRankRun, pagerank
from spark_bridge.analyses.triangles import triangle_count, triangles
from spark_bridge.analyses.wcc import weakly_connected_components

__all__ = [
    "PageRankRun",
    "activity",
    "degree_distribution",
    "degrees",
    "pagerank",
    "triangle_count",
    "triangles",
    "weakly_connected_components",
]
