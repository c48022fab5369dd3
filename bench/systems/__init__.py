"""One script per system of the side-by-side comparison (:mod:`bench.compare`), each run
by the interpreter of that system's own environment (:mod:`bench.envs`; chronoray's:
this checkout's). A script imports only its system, pyarrow and :mod:`bench.systems.common`
(standard library and pyarrow only), reads the same Parquet input, and answers with the
graph at T, its PageRank and its components (:func:`bench.systems.common.run`)."""
