"""Spark on Parquet, as a plain pyspark user would do it: a local session
(``local[N]``), ``spark.read.parquet`` of the input, the graph at T with DataFrame
operations, PageRank by power iteration (networkx's definition: distinct pairs, dangling
rank spread over all vertices) and components by min-label propagation, each a loop of
DataFrame jobs. The session start is its own phase."""

from __future__ import annotations

import os
import sys
from typing import Any

from bench.systems.common import run


def session(shared: dict[str, Any]) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    cores = shared["params"].raw.get("cores", 2)
    shared["spark"] = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("chronoray-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    shared["spark"].sparkContext.setLogLevel("ERROR")
    shared["versions"]["pyspark"] = pyspark.__version__


def load(shared: dict[str, Any]) -> None:
    spark, params = shared["spark"], shared["params"]
    shared["vertices_in"] = spark.read.parquet(str(params.vertices)).cache()
    shared["edges_in"] = spark.read.parquet(str(params.edges)).cache()
    shared["vertices_in"].count(), shared["edges_in"].count()


def view(shared: dict[str, Any]) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    at = shared["params"].at
    edges = shared["edges_in"].withColumn("seq", F.monotonically_increasing_id())
    last = Window.partitionBy("src", "dst").orderBy(F.col("t").desc(), F.col("seq").desc())
    alive = (
        edges.filter(F.col("t") <= at)
        .withColumn("n", F.row_number().over(last))
        .filter((F.col("n") == 1) & (F.col("op") == 1))
        .select("src", "dst")
        .localCheckpoint()
    )
    vertices = (
        shared["vertices_in"]
        .filter(F.col("t") <= at)
        .select(F.col("id").alias("v"))
        .union(alive.select(F.col("src").alias("v")))
        .union(alive.select(F.col("dst").alias("v")))
        .distinct()
        .localCheckpoint()
    )
    shared["alive"], shared["vertex_frame"] = alive, vertices
    rows = alive.collect()
    shared["edges"] = ([r.src for r in rows], [r.dst for r in rows])
    shared["n"] = vertices.count()


def pagerank(shared: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    params, alpha, n = shared["params"], 0.85, shared["n"]
    alive, vertices = shared["alive"], shared["vertex_frame"]
    degrees = alive.groupBy("src").agg(F.count("*").alias("deg"))
    links = alive.join(degrees, "src").select("src", "dst", (1.0 / F.col("deg")).alias("w"))
    links = links.localCheckpoint()
    dangling = vertices.join(degrees, vertices.v == degrees.src, "left_anti").withColumn(
        "dangling", F.lit(True)
    )
    flagged = (
        vertices.join(dangling.select("v", "dangling"), "v", "left")
        .select("v", F.coalesce("dangling", F.lit(False)).alias("dangling"))
        .localCheckpoint()
    )
    ranks = flagged.withColumn("r", F.lit(1.0 / n)).localCheckpoint()
    lost = ranks.filter("dangling").agg(F.sum("r")).first()[0] or 0.0
    iterations, change = 0, float("inf")
    while change >= n * params.tol:  # networkx's stopping test
        iterations += 1
        spread = (
            links.join(ranks.select(F.col("v").alias("src"), "r"), "src")
            .groupBy("dst")
            .agg(F.sum(F.col("w") * F.col("r")).alias("in"))
        )
        new = (
            ranks.join(spread, ranks.v == spread.dst, "left")
            .select(
                "v",
                "dangling",
                F.col("r").alias("old"),
                ((1 - alpha) / n + alpha * (F.coalesce("in", F.lit(0.0)) + lost / n)).alias("r"),
            )
            .localCheckpoint()
        )
        # one job per iteration besides the checkpoint: the change and the next dangling mass
        row = new.agg(
            F.sum(F.abs(F.col("r") - F.col("old"))),
            F.sum(F.when(F.col("dangling"), F.col("r")).otherwise(0.0)),
        ).first()
        change, lost = row[0], row[1] or 0.0
        ranks = new.select("v", "dangling", "r")
    shared["notes"] = {"pagerank_iterations": iterations}
    shared["ranks"] = {r.v: r.r for r in ranks.collect()}


def components(shared: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    alive, vertices = shared["alive"], shared["vertex_frame"]
    links = (
        alive.select(F.col("src").alias("a"), F.col("dst").alias("b"))
        .union(alive.select(F.col("dst").alias("a"), F.col("src").alias("b")))
        .localCheckpoint()
    )
    labels = vertices.select("v", F.col("v").alias("label")).localCheckpoint()
    while True:
        heard = (
            links.join(labels.withColumnRenamed("v", "b"), "b")
            .groupBy("a")
            .agg(F.min("label").alias("heard"))
        )
        new = (
            labels.join(heard, labels.v == heard.a, "left")
            .select("v", F.least("label", F.coalesce("heard", "label")).alias("label"))
            .localCheckpoint()
        )
        changed = (
            new.join(labels.withColumnRenamed("label", "old"), "v")
            .filter(F.col("label") != F.col("old"))
            .count()
        )
        labels = new
        if changed == 0:
            break
    shared["components"] = {r.v: r.label for r in labels.collect()}
    shared["spark"].stop()


if __name__ == "__main__":
    run(
        "spark",
        [
            ("session", session),
            ("load", load),
            ("view at T", view),
            ("pagerank", pagerank),
            ("components", components),
        ],
    )
