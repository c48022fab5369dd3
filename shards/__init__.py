"""Shard workers: pure ShardCore, Ray ShardWorker, logs, clocks, routing."""
