"""The SparkSession our own jobs run in, configured from the dbt target in profiles.yml.

For the `local` target it is exactly dbt's embedded session: the settings live in one place,
profiles.yml (`server_side_parameters` of the `local` output). Ingestion reads them from
there, so that the same process can run ingestion and then dbt: dbt-spark's `getOrCreate()`
finds the session already running with the same metastore, warehouse and settings, and Spark
starts once. For the `cluster` target it is a Spark application on the cluster's master
(`ingestion_spark_conf` of the `cluster` output), beside the Thrift Server dbt talks to.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import yaml

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime import fast_start, iceberg
from kappa_shop.runtime.delta import check_delta_pin, jars_unavailable

PROFILE_NAME = "kappa_shop"
# how long a new Spark process waits for the JVM of one that just ended to let go of the
# embedded metastore (check_metastore_free)
METASTORE_WAIT_SECONDS = 10.0


def _render(text: str) -> str:
    """Render the profile's Jinja the way dbt does for the functions profiles.yml uses."""

    def env_var(name: str, default: str | None = None) -> str:
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise KappaShopError(f"profiles.yml needs the environment variable {name}")
        return default

    def var(name: str, default: object = None) -> object:
        # the profile's own value: a build's destination gives dbt its vars explicitly
        # (kappa_shop.runtime.dbt.Destination)
        return default

    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters["as_number"] = lambda value: value
    return environment.from_string(text).render(env_var=env_var, var=var)


def profile_output(profiles_dir: Path, target: str) -> dict[str, Any]:
    """The rendered settings of one output (target) of the project's dbt profile."""
    path = profiles_dir / "profiles.yml"
    if not path.is_file():
        raise KappaShopError(f"no profiles.yml in {profiles_dir} (DBT_PROFILES_DIR)")
    profile = yaml.safe_load(_render(path.read_text()))[PROFILE_NAME]
    outputs = profile["outputs"]
    if target not in outputs:
        raise KappaShopError(
            f"unknown target {target!r}: profiles.yml defines {', '.join(sorted(outputs))}"
        )
    return outputs[target]


def default_target(profiles_dir: Path) -> str:
    """The profile's default target (KAPPA_SHOP_TARGET, else `local`)."""
    path = profiles_dir / "profiles.yml"
    return str(yaml.safe_load(_render(path.read_text()))[PROFILE_NAME]["target"])


def session_for(profiles_dir: Path, target: str):  # noqa: ANN201 (pyspark imports lazily)
    """The SparkSession our own jobs (ingestion) run in for `target`."""
    return session_for_output(profile_output(profiles_dir, target), target)


def session_for_output(  # noqa: ANN201
    output: dict[str, Any], target: str, extra_jars: Sequence[Path] = ()
):
    """Start (or reuse) the SparkSession for a rendered profile output.

    - `method: session` (local): the embedded session dbt-spark itself uses, with the Hive
      metastore and warehouse of the project directory, configured by the output's
      `server_side_parameters`.
    - `method: thrift` (cluster): a Spark application on the cluster's master, configured by
      the output's `ingestion_spark_conf` (a key of ours that dbt ignores). It has no catalog
      of its own: ingestion stages files that the Thrift Server loads into the tables.
    """
    method = output.get("method")
    if method == "session":
        settings = dict(output.get("server_side_parameters") or {})
        settings["spark.sql.ansi.enabled"] = "false"  # as dbt-spark forces it
        hive = True
    elif method == "thrift":
        settings = dict(output.get("ingestion_spark_conf") or {})
        if "spark.master" not in settings:
            raise KappaShopError(
                f"target {target!r} has no `ingestion_spark_conf` with a spark.master in "
                "profiles.yml: ingestion needs to know where the cluster's master is"
            )
        check_master_reachable(str(settings["spark.master"]), target)
        hive = False
    else:
        raise KappaShopError(
            f"target {target!r} uses method {method!r}; kappa-shop runs on `session` "
            "(embedded Spark) and `thrift` (a Spark Thrift Server) targets"
        )
    if extra_jars:
        jars = [str(settings["spark.jars"])] if settings.get("spark.jars") else []
        settings["spark.jars"] = ",".join([*jars, *(str(jar) for jar in extra_jars)])
    delta = check_delta_pin(settings, target)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # (a SparkContext of this process, started by dbt in one of its threads, is no rival)
    if hive and SparkContext._active_spark_context is None:
        check_metastore_free(Path.cwd() / "metastore_db", wait=METASTORE_WAIT_SECONDS)
    builder = SparkSession.builder
    if hive:
        builder = builder.enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(str(key), str(value))
    # (the fast start, when on, is the embedded targets' alone: docs/fast-start.md)
    with contextlib.nullcontext() if hive else fast_start.left_out():
        try:
            return builder.getOrCreate()
        except Exception as error:  # Spark's JVM did not start: Ivy could not resolve the jars?
            missing = _missing_format_jars(settings, target, delta)
            if missing is None:
                raise
            raise missing from error


def _missing_format_jars(
    settings: dict[str, Any], target: str, delta: str | None
) -> KappaShopError | None:
    """The one-line error for a Spark that could not start because the jars of its table
    format (Delta Lake, Apache Iceberg) cannot be had, or None when they can (another cause)."""
    iceberg_version = iceberg.iceberg_version(settings)
    if delta is not None and (reason := jars_unavailable(delta)) is not None:
        return KappaShopError(f"target {target!r} needs Delta Lake {delta}: {reason}")
    if iceberg_version is not None and (reason := iceberg.jars_unavailable(iceberg_version)):
        return KappaShopError(f"target {target!r} needs Apache Iceberg {iceberg_version}: {reason}")
    return None


def prepare_scratch_directory(directory: Path, profiles_dir: Path) -> None:
    """Make `directory` a place an embedded Spark of the project can run in with a metastore
    and warehouse of its own: the profile's relative paths (conf/ for log4j, logs/ for
    Derby's log) resolve there as in the project."""
    (directory / "conf").symlink_to(profiles_dir.resolve() / "conf")
    (directory / "logs").mkdir()


def local_file_system(spark: Any) -> str:
    """The class of the Hadoop file system a SparkSession reads and writes `file:` paths with."""
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    file_system = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI("file:///"), configuration
    )
    return str(file_system.getClass().getName())


def check_metastore_free(metastore: Path, wait: float = 0.0) -> None:
    """Refuse, in one line, to start a second Spark process on an embedded metastore.

    Derby admits one process per metastore directory and holds an OS lock on its
    `dbex.lck` while it runs (released when the process ends, however it ends). Without this
    check, a second build of the same project at once fails inside Spark with a long Derby
    stack trace; with it, it stops before anything starts or changes.

    A JVM outlives its Python process by up to a second or so (it ends when its parent's pipe
    closes), so a command started right after another one ends may find the lock still held:
    `wait` seconds of polling let it through, and refuse only a process that really runs."""
    import fcntl

    lock_file = metastore / "dbex.lck"
    deadline = time.monotonic() + wait
    while lock_file.is_file():
        with lock_file.open("rb") as handle:
            try:
                fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(0.25)
                    continue
                raise KappaShopError(
                    f"another Spark process (a build, a verify, a dbt command) is using this "
                    f"project's metastore ({metastore}): one at a time per project directory. "
                    "Wait for it to finish; nothing was started or changed."
                ) from None
            fcntl.lockf(handle, fcntl.LOCK_UN)
            return


def check_master_reachable(master: str, target: str) -> None:
    """Fail in a second, not after Spark's minute of retries, when no master answers."""
    match = re.fullmatch(r"spark://([^:/]+):(\d+)", master)
    if not match:
        return  # local[N], yarn, k8s://...: Spark reports those itself
    host, port = match.group(1), int(match.group(2))
    try:
        with socket.create_connection((host, port), timeout=10):
            pass
    except OSError as error:
        raise KappaShopError(
            f"target {target!r}: no Spark master answers at {master} "
            f"({error.strerror or error}). Check that the cluster is up (`kappa-shop cluster "
            "status`; start the local one with `kappa-shop cluster up`) and that "
            "KAPPA_SHOP_SPARK_MASTER names it"
        ) from None
