"""Spark (RayDP) in the same Ray cluster, snapshots as DataFrames. Not built yet: see the
project's issues."""

__all__: list[str] = []
