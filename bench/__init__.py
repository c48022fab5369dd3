"""Benchmarks: workloads (ring, ...) and runners writing ``bench/results/*.json`` and tables."""
