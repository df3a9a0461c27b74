"""`kappa-shop check`: is this machine ready (Java 17 for Spark), and a target's connection."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kappa_shop.commands.common import Subcommands, open_project, project_root

if TYPE_CHECKING:
    from kappa_shop.runtime.dbt import DbtProject


def register(commands: Subcommands) -> None:
    check = commands.add_parser(
        "check",
        help="check that this machine can run the project (Java 17 for Spark)",
        description=(
            "Check the prerequisites that pip cannot install: a Java 17 runtime. With "
            "--target cluster, also that the target's Thrift Server and master answer."
        ),
    )
    check.add_argument(
        "--target",
        default=None,
        help="also check this dbt target's connection (a thrift target: server and master)",
    )
    check.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.runtime.environment import check_java

    root = project_root(arguments)
    java = check_java()
    print(f"ok: Java {java.major_version} at {java.executable}; project at {root}")
    if arguments.target is None:
        return 0
    return check_target(open_project(arguments, root))


def check_target(project: DbtProject) -> int:
    """What the target is (Spark's version, the master, the file system, the class archive,
    Delta) and whether its raw schema holds tables, one line each."""
    from kappa_shop.runtime.dbt import models_format
    from kappa_shop.runtime.delta import delta_version
    from kappa_shop.runtime.fast_start import FILE_SYSTEM
    from kappa_shop.runtime.iceberg import iceberg_version
    from kappa_shop.runtime.spark import check_master_reachable, local_file_system
    from kappa_shop.runtime.warehouse import table_names

    output, target = project.output, project.target_name
    warehouse = project.warehouse()
    if output.get("method") == "thrift":
        version = warehouse.sql("select version() as version")[0]["version"]
        print(
            f"ok: target {target!r}: Spark {version} answers at {output['host']}:{output['port']}"
        )
        master = str((output.get("ingestion_spark_conf") or {}).get("spark.master", ""))
        check_master_reachable(master, target)
        print(f"ok: target {target!r}: the master for ingestion answers at {master}")
        if models_format(target) == "delta":  # its models are Delta tables
            _check_server_has_delta(warehouse, target, output)
    if output.get("method") == "session":
        file_system = local_file_system(project.spark())
        print(
            f"ok: target {target!r}: local files through {file_system}"
            + (" (the fast start's: docs/fast-start.md)" if file_system == FILE_SYSTEM else "")
        )
        print(_class_archive_line(project.spark(), target))
    settings = output.get("server_side_parameters") or {}
    delta = delta_version(settings)
    if delta is not None:
        print(
            f"ok: target {target!r}: Delta Lake {delta} (the installed delta-spark's version); "
            "its models are Delta tables"
        )
    iceberg = iceberg_version(settings)
    if iceberg is not None:
        print(
            f"ok: target {target!r}: Apache Iceberg {iceberg} in the session's Hive metastore; "
            "its models are Iceberg tables"
        )
    raw = table_names(warehouse, project.raw_schema)
    print(
        f"ok: target {target!r}: models go to schema {project.schema}; the raw schema "
        f"{project.raw_schema} "
        + (f"holds {len(raw)} tables" if raw else "is empty or missing (nothing ingested yet)")
    )
    return 0


DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"


def _check_server_has_delta(warehouse: Any, target: str, output: dict[str, Any]) -> None:
    """A Delta target's Thrift Server must run Delta Lake's session extension: without it the
    first model fails deep inside Spark. One line naming the fix instead."""
    from kappa_shop.errors import KappaShopError

    rows = warehouse.sql("set spark.sql.extensions")
    extensions = str(rows[0].get("value", "")) if rows else ""
    if DELTA_EXTENSION not in extensions:
        raise KappaShopError(
            f"target {target!r} builds Delta tables, but the Thrift Server at {output['host']}:"
            f"{output['port']} runs without Delta Lake (spark.sql.extensions: "
            f"{extensions or 'none'}): start it with Delta's jars, {DELTA_EXTENSION} and Delta's "
            "catalog (docs/cluster.md), or use the target without `_delta`"
        )
    print(f"ok: target {target!r}: the Thrift Server runs Delta Lake; its models are Delta tables")


def _class_archive_line(spark: Any, target: str) -> str:
    """Whether the embedded Spark maps its classes from the fast start's class archive
    (docs/fast-start.md): a JVM that cannot use it starts as usual and says nothing."""
    from kappa_shop.runtime.class_archive import archive_status

    archive, in_use = archive_status(spark)
    if archive is None:
        return f"ok: target {target!r}: Spark loads its classes from its jars (no class archive)"
    if in_use:
        return f"ok: target {target!r}: Spark maps its classes from the class archive {archive}"
    if in_use is None:
        return f"ok: target {target!r}: class archive {archive} (whether Java uses it is unknown)"
    return (
        f"note: target {target!r}: the class archive {archive} is not in use (missing, or written"
        f" for other jars or another Java): delete {Path(archive).parent} and run `make setup"
        " KAPPA_SHOP_FAST_START=1` to build it again"
    )
