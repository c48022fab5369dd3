"""The ``chronoray`` command line (entry point :func:`main`).

The commands live in modules of this package -- named graphs (:mod:`.graphs`: start, ls,
stop), the gateway (:mod:`.serve`), ingestion (:mod:`.ingest`, :mod:`.feeding`), questions
(:mod:`.query`: stats, vertex, snapshot, history, analyze, inspect-log,
upgrade-log), live results
(:mod:`.live`: live, subscribe) and whole programs (:mod:`.programs`: demo, pipeline,
bench) -- over shared parts: the group and its settings (:mod:`.app`), shared options
(:mod:`.options`), the graph a command works on, chosen once (:mod:`.target`), output for
people (:mod:`.rendering`), errors (:mod:`.errors`) and the per-run driver log
(:mod:`.runlog`). Commands of other packages (``cep``) come from the entry-point group
``chronoray.commands``.

An option that sets a graph setting reads the same environment variable as
:class:`~chronoray.config.Config` (``CHRONORAY_LOG_DIR``, ``CHRONORAY_NUM_SHARDS``,
``CHRONORAY_RAY_ADDRESS``...; ``--help`` shows each), and ``--config FILE`` reads a TOML
file first. Every error ends in one line on stderr, without a traceback (``chronoray
--debug`` shows it): ``Error: ...`` and exit status 2 for a usage error (an option out of
range, two cuts, a shard count other than the graph's...), ``error: ...`` and 1 for a
failure (a graph that does not exist, a bad record, a file going back in time, an unknown
vertex, another file under a used source name...). Ray's and Spark's own log lines go to
a driver log file of the run, named in the last line of a command that started them.
"""

from __future__ import annotations

from chronoray.cli import graphs, ingest, live, programs, query, serve
from chronoray.cli.app import PLUGIN_GROUP, Settings, main
from chronoray.cli.errors import Failed
from chronoray.cli.live import live_table
from chronoray.cli.options import EventTime
from chronoray.cli.programs import run_checkout_module

__all__ = [
    "PLUGIN_GROUP",
    "EventTime",
    "Failed",
    "Settings",
    "live_table",
    "main",
    "run_checkout_module",
]

_COMMAND_MODULES = (graphs, ingest, live, programs, query, serve)  # each registers its commands
