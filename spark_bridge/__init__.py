"""Spark (RayDP) in the same Ray cluster: one reused session, snapshots as DataFrames and
results back as Ray datasets, Arrow or pandas. Analyses come next (see the issues)."""

from spark_bridge.convert import snapshot_to_spark, to_arrow, to_pandas, to_ray_dataset
from spark_bridge.session import JDK17_JAVA_OPTIONS, spark_session, stop_spark

__all__ = [
    "JDK17_JAVA_OPTIONS",
    "snapshot_to_spark",
    "spark_session",
    "stop_spark",
    "to_arrow",
    "to_pandas",
    "to_ray_dataset",
]
