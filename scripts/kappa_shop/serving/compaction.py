"""Compaction of the live service's own tables (`kappa_live_cycles`, `kappa_live_latency`).

Every cycle that builds appends a row to each (two small files): a service that runs for days
at a cycle every 10 s would leave tens of thousands of files, which every `kappa-shop live
--status`, every cycle's own reads and every query of them would list and open. When a table
holds more than `limit` data files, the service, between two cycles, copies its rows into one
file of a table beside it (`<table>__compacted`), drops the table and renames the copy into
place. (Parquet has no atomic rewrite of a table; the contract's own tables are written the
same way, built beside and renamed, `_rebuild` in packages/kappa.)

Each step leaves a state the next start repairs (`repair`, before the service writes):
- killed while the copy was written: the table is whole; the copy, or the files Spark wrote
  before it registered the copy's table, is dropped;
- killed after the copy, before the drop: both are whole; the copy is dropped;
- killed between the drop and the rename: the copy, whole before the table was dropped, is
  renamed into place.
So no row is lost or doubled whatever the moment of a kill. A reader of the table (`live
--status`) in the instant between the drop and the rename finds it missing and can ask again.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from kappa_shop.runtime.warehouse import Warehouse, table_directory, table_names

COMPACTED = "__compacted"
# compacted when a table holds more data files than this (about 250 cycles that built)
DEFAULT_LIMIT = 500


def data_files(warehouse: Warehouse, schema: str, table: str) -> int:
    """The data files in the table's directory (its default location): Spark's hidden files
    (`_SUCCESS`, checksums, staging directories) left out."""
    directory = table_directory(warehouse, schema, table)
    if not directory.is_dir():
        return 0
    return sum(
        1
        for path in directory.rglob("*")
        if path.is_file()
        and not any(part.startswith(("_", ".")) for part in path.relative_to(directory).parts)
    )


def repair(warehouse: Warehouse, schema: str, tables: Sequence[str]) -> list[str]:
    """Finish or undo the compaction a killed service left (above); what it did, one line per
    table. Call it only while holding the lock that makes this process the tables' writer."""
    existing = table_names(warehouse, schema)
    done = []
    for table in tables:
        copy = f"{table}{COMPACTED}"
        if copy in existing and table not in existing:
            warehouse.sql(f"alter table {schema}.{copy} rename to {schema}.{table}")
            done.append(f"{table}: its compacted copy renamed into place")
        elif copy in existing:
            warehouse.sql(f"drop table {schema}.{copy}")
            done.append(f"{table}: an unfinished compacted copy dropped")
        elif table_directory(warehouse, schema, copy).is_dir():
            shutil.rmtree(table_directory(warehouse, schema, copy))
            done.append(f"{table}: the files of an unfinished compacted copy deleted")
    return done


def compact(warehouse: Warehouse, schema: str, table: str) -> None:
    """Rewrite the table's rows into one file: copied beside, the table dropped, the copy
    renamed into place."""
    copy = f"{schema}.{table}{COMPACTED}"
    warehouse.sql(
        f"create table {copy} using parquet as select /*+ COALESCE(1) */ * from {schema}.{table}"
    )
    warehouse.sql(f"drop table {schema}.{table}")
    warehouse.sql(f"alter table {copy} rename to {schema}.{table}")


def compact_when_due(
    warehouse: Warehouse, schema: str, tables: Sequence[str], limit: int
) -> list[str]:
    """Compact each table that holds more than `limit` data files (0: never); one line per
    table compacted."""
    if limit <= 0:
        return []
    done = []
    for table in tables:
        files = data_files(warehouse, schema, table)
        if files > limit:
            compact(warehouse, schema, table)
            done.append(f"{schema}.{table} compacted: {files:,} data files into 1")
    return done
