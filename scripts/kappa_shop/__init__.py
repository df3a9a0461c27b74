"""kappa_shop: the Python side of the project (environment checks, running dbt in-process,
and, in later work, the log generator, ingestion, the proof and the benchmark).

Everything is reached through one command-line entry point, ``kappa-shop``, with subcommands.
"""

__version__ = "0.1.0"
