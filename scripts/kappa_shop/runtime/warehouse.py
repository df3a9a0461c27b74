"""SQL on the tables of a dbt target, the same way on every target.

dbt reaches a target through its adapter; our own jobs (ingestion's catalog work, the proof's
diffs, checksums) need SQL on the same tables. A `Warehouse` runs Spark SQL statements where
the target's tables live:

- `SessionWarehouse`: an embedded SparkSession (`method: session`, the `local` target), whose
  metastore and warehouse are in the project directory;
- `ThriftWarehouse`: a Spark Thrift Server (`method: thrift`, the `cluster` target), through
  PyHive, the driver dbt-spark uses, with the target's `server_side_parameters`, so session
  settings (UTC, ANSI off) are the ones dbt's own connections get.

`connect()` picks one from the target's profile and, for a Thrift Server, fails fast with one
line naming the target and what to check when nothing (or not a Thrift Server) answers.
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from kappa_shop.errors import KappaShopError

CONNECT_TIMEOUT_SECONDS = 10
SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Warehouse(Protocol):
    """Spark SQL on the tables of one target."""

    target: str

    def sql(self, statement: str) -> list[dict[str, Any]]:
        """Run one statement; its rows as dicts (none for DDL and inserts)."""

    def close(self) -> None:
        """Release the connection (an embedded session stays up for the process)."""


class SessionWarehouse:
    """The tables of an embedded SparkSession (the `local` target)."""

    def __init__(self, spark: Any, target: str = "local") -> None:
        self.spark = spark
        self.target = target

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in self.spark.sql(statement).collect()]

    def close(self) -> None:
        pass


class ThriftWarehouse:
    """The tables behind a Spark Thrift Server (the `cluster` target).

    Each statement runs in a session of its own. A Thrift Server session caches the file
    listing of every table it has read; when another session (dbt's) rewrites the table, a
    long-lived session of ours would read files that are gone. A new session costs a few
    milliseconds and always sees the tables as they are.
    """

    def __init__(self, output: dict[str, Any], target: str) -> None:
        self.output = output
        self.target = target
        self.address = f"{output.get('host')}:{output.get('port', 10000)}"

    def sql(self, statement: str) -> list[dict[str, Any]]:
        connection = _open_session(self.output, self.target)
        cursor = connection.cursor()
        try:
            cursor.execute(statement)
            if cursor.description is None:
                return []
            names = [column[0].split(".")[-1] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except Exception as error:
            raise KappaShopError(
                f"target {self.target!r} ({self.address}) rejected a statement: "
                f"{_server_message(error)}\n  statement: {statement[:300]}"
            ) from None
        finally:
            cursor.close()
            connection.close()

    def close(self) -> None:
        pass


def connect(output: dict[str, Any], target: str, spark: Any = None) -> Warehouse:
    """The Warehouse of a rendered profile output. `spark` serves a `session` target."""
    method = output.get("method")
    check_schema_name(str(output.get("schema", "")), target)
    if method == "session":
        if spark is None:
            from kappa_shop.runtime.spark import session_for_output

            spark = session_for_output(output, target)
        return SessionWarehouse(spark, target)
    if method == "thrift":
        return open_thrift(output, target)
    raise KappaShopError(
        f"target {target!r} uses method {method!r}; kappa-shop runs on `session` (embedded "
        "Spark) and `thrift` (a Spark Thrift Server) targets"
    )


def check_schema_name(schema: str, target: str) -> None:
    """A schema name Spark takes unquoted (letters, digits, underscores), else one line."""
    if not SCHEMA_NAME.match(schema):
        raise KappaShopError(
            f"target {target!r}: schema {schema!r} is not a plain name (letters, digits and "
            "underscores, not starting with a digit): check KAPPA_SHOP_SCHEMA"
        )


def open_thrift(output: dict[str, Any], target: str) -> ThriftWarehouse:
    """The target's Thrift Server, checked to answer (one line naming what to check if not)."""
    _open_session(output, target).close()
    return ThriftWarehouse(output, target)


def _open_session(output: dict[str, Any], target: str) -> Any:
    """A PyHive connection (one Thrift Server session), giving up after
    CONNECT_TIMEOUT_SECONDS when nothing, or not a Thrift Server, answers."""
    host, port = str(output.get("host")), int(output.get("port", 10000))
    address = f"{host}:{port}"
    hint = (
        f"target {target!r}: no Spark Thrift Server answers at {address}"
        " ({reason}). Check that the server is up (`kappa-shop cluster status`; start the local "
        "one with `kappa-shop cluster up`) and that KAPPA_SHOP_THRIFT_HOST/KAPPA_SHOP_THRIFT_PORT "
        "name it"
    )
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS):
            pass
    except OSError as error:
        raise KappaShopError(hint.format(reason=error.strerror or str(error))) from None

    import thrift_sasl
    from pyhive import hive
    from thrift.transport import TSocket

    username = output.get("user") or "kappa_shop"
    thrift_socket = TSocket.TSocket(host, port)
    # a port that accepts connections but is not a Thrift Server would otherwise hang the
    # handshake forever
    thrift_socket.setTimeout(CONNECT_TIMEOUT_SECONDS * 1000)
    transport = thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(
            host=host, sasl_auth="PLAIN", username=username, password="x"
        ),
        "PLAIN",
        thrift_socket,
    )
    configuration = {
        str(key): str(value) for key, value in (output.get("server_side_parameters") or {}).items()
    }
    try:
        connection = hive.connect(
            thrift_transport=transport, username=username, configuration=configuration
        )
    except Exception as error:
        reason = f"the handshake failed: {_first_line(error)}; is it another service's port?"
        raise KappaShopError(hint.format(reason=reason)) from None
    thrift_socket.setTimeout(None)  # statements (a full refresh) may run for long
    return connection


def warehouse_dir(warehouse: Warehouse) -> Path:
    """The target's warehouse directory (spark.sql.warehouse.dir), on the local file system."""
    rows = warehouse.sql("set spark.sql.warehouse.dir")
    uri = str(rows[0]["value"])
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise KappaShopError(
            f"target {warehouse.target!r}: the warehouse {uri} is not on the local file system; "
            "ingestion keeps its checkpoint beside the warehouse and needs a path it can reach "
            "(a shared mount)"
        )
    return Path(unquote(parsed.path)).resolve()


def table_directory(warehouse: Warehouse, schema: str, table: str) -> Path:
    """Where a table of `schema` keeps its files at its default location."""
    return warehouse_dir(warehouse) / f"{schema}.db" / table


def clear_unfinished_writes(warehouse: Warehouse, schema: str, tables: list[str]) -> list[str]:
    """Delete the `_temporary` directory a killed write left in each table's directory (the
    default location, `<warehouse>/<schema>.db/<table>`), and return the tables that had one.

    Spark's appends and static-partition overwrites stage in that shared directory; a write
    killed after its tasks committed and before its job did leaves their output there, and the
    next such write into the table merges it in with its own: rows a second time
    (SPARK-29037, found by `kappa-shop chaos` killing inside writes). Call it only while
    holding the lock that makes this process the tables' one writer."""
    cleared = []
    for table in tables:
        staging = table_directory(warehouse, schema, table) / "_temporary"
        if staging.is_dir():
            shutil.rmtree(staging)
            cleared.append(table)
    return cleared


def schema_exists(warehouse: Warehouse, schema: str) -> bool:
    rows = warehouse.sql(f"show schemas like '{schema}'")
    return any(next(iter(row.values())) == schema for row in rows)


def table_names(warehouse: Warehouse, schema: str) -> set[str]:
    """The tables (and views) of `schema`; none when it does not exist. Temporary views,
    which `show tables` lists with every schema's tables, are left out."""
    if not schema_exists(warehouse, schema):
        return set()
    return {
        str(row["tableName"])
        for row in warehouse.sql(f"show tables in {schema}")
        if not row.get("isTemporary")
    }


def columns(warehouse: Warehouse, relation: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A table's columns with their Spark SQL types, and its partition columns."""
    described: list[tuple[str, str]] = []
    partitions: list[str] = []
    section = "columns"
    for row in warehouse.sql(f"describe table {relation}"):
        name, data_type = str(row["col_name"] or "").strip(), str(row["data_type"] or "").strip()
        if name == "# Partition Information":
            section = "partitions"
        elif not name or name.startswith("#"):
            if name.startswith("# ") and name != "# col_name":
                section = "other"
        elif section == "columns":
            described.append((name, data_type))
        elif section == "partitions":
            partitions.append(name)
    return described, partitions


def checksums(
    warehouse: Warehouse, relations: Iterable[str], leave_out: Collection[str] = ()
) -> dict[str, tuple[int, int]]:
    """Row count and an order-independent checksum of each relation, in one query.

    The checksum sums a 64-bit hash of each row's JSON (VARIANT columns included); two tables
    with the same rows in any order have the same pair. Columns named in `leave_out` (wall-clock
    times, say) are not part of it.
    """
    relations = list(relations)
    if not relations:
        return {}

    def row_json(relation: str) -> str:
        if not leave_out:
            return "to_json(struct(*))"
        kept = [name for name, _ in columns(warehouse, relation)[0] if name not in leave_out]
        return "to_json(struct(" + ", ".join(f"`{name}`" for name in kept) + "))"

    union = "\nunion all\n".join(
        f"select '{relation}' as relation, count(*) as row_count, "
        f"cast(coalesce(sum(cast(xxhash64({row_json(relation)}) as decimal(38, 0))), 0) "
        f"as string) as checksum from {relation}"
        for relation in relations
    )
    return {
        str(row["relation"]): (int(row["row_count"]), int(str(row["checksum"])))
        for row in warehouse.sql(union)
    }


def _server_message(error: BaseException) -> str:
    """The server's own error text from a PyHive error (which wraps the whole response)."""
    response = error.args[0] if error.args else None
    status = getattr(response, "status", None)
    message = getattr(status, "errorMessage", None) or getattr(response, "errorMessage", None)
    return _first_line(Exception(message)) if message else _first_line(error)


def _first_line(error: BaseException) -> str:
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()[:500]
    return type(error).__name__
