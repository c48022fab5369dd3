"""Spark (RayDP) in the same Ray cluster: one reused session, snapshots as DataFrames,
results back as Ray datasets, Arrow or pandas, and graph analyses in Spark."""

from spark_bridge.analyses import (
    PageRankRun,
    activity,
    degree_distribution,
    degrees,
    pagerank,
    triangle_count,
    triangles,
    weakly_connected_components,
)
from spark_bridge.convert import snapshot_to_spark, to_arrow, to_pandas, to_ray_dataset
from spark_bridge.session import JDK17_JAVA_OPTIONS, spark_session, stop_spark

__all__ = [
    "JDK17_JAVA_OPTIONS",
    "PageRankRun",
    "activity",
    "degree_distribution",
    "degrees",
    "pagerank",
    "snapshot_to_spark",
    "spark_session",
    "stop_spark",
    "to_arrow",
    "to_pandas",
    "to_ray_dataset",
    "triangle_count",
    "triangles",
    "weakly_connected_components",
]
