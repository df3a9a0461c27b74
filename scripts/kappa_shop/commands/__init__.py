"""The command line's commands: one module each, holding its arguments (`register`, which adds
its parser and sets `handler`) and its handler (`run`, arguments in, exit status out). Jobs never
import these: a command calls the jobs of the wings below it."""

from __future__ import annotations

from types import ModuleType

from kappa_shop.commands import (
    bench,
    build,
    chaos,
    check,
    cluster,
    deliver,
    docs_coverage,
    generate,
    ingest,
    kafka,
    lineage,
    live,
    produce,
    reprocess,
    rollback,
    slim_ci,
    status,
    verify,
    versions,
)

# in the order `kappa-shop --help` lists them
COMMANDS: tuple[ModuleType, ...] = (
    check,
    generate,
    deliver,
    produce,
    ingest,
    verify,
    build,
    live,
    status,
    reprocess,
    rollback,
    versions,
    chaos,
    bench,
    cluster,
    kafka,
    docs_coverage,
    lineage,
    slim_ci,
)
