"""Shard workers: pure ShardCore (execute steps, block writer), Ray ShardWorker, the log
format (codec) and its one reader (replay), log stores, clocks, routing."""
