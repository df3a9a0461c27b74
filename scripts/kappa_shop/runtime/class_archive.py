"""A class-data sharing archive of Spark's classes, so that each embedded Spark starts faster:
half of the fast start (kappa_shop.runtime.fast_start, docs/fast-start.md), off by default.

Every dbt command, `kappa-shop` command and test process of the embedded targets starts a
JVM that loads and verifies some 20,000 of Spark's classes before it runs a statement. Java's
class-data sharing maps those classes, already parsed and verified, from an archive file.

`python -m kappa_shop.runtime.fast_start_build` writes the archive: Spark is started once with the
`local` target's settings and the fast start's class path, in a scratch directory (a metastore and
warehouse of its own), runs the kinds of statement a dbt run does, and the JVM writes every class it
loaded from the class path to the archive when it exits (`-XX:ArchiveClassesAtExit`). The fast
start's properties file then starts Spark with `-XX:SharedArchiveFile`.

The archive only speeds things up. A JVM that cannot use it (no file, or one written for
other jars: the JVM checks the class path and every jar's size and time) loads its classes as
usual, and says nothing about it (`-Xlog:cds...=off`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.processes import process_alive
from kappa_shop.runtime.spark import prepare_scratch_directory, profile_output, session_for_output

# Statements of the kinds dbt's materializations and our macros run, so that the classes they
# need are loaded (and archived): a Hive database and partitioned parquet tables, dynamic
# partition overwrite, windows, aggregates, joins, JSON, describe and show.
WORKLOAD = (
    "create database if not exists archive_warmup",
    "create table archive_warmup.events (id bigint, user_id string, occurred_at timestamp, "
    "payload string) using parquet partitioned by (batch_id int)",
    "insert into archive_warmup.events partition (batch_id) "
    "select id, cast(id % 7 as string), timestamp'2024-03-01 00:00:00' + make_interval(0, 0, "
    "0, 0, 0, cast(id as int)), to_json(named_struct('n', id)), cast(id % 3 as int) "
    "from range(200)",
    "insert overwrite table archive_warmup.events partition (batch_id) "
    "select id, user_id, occurred_at, payload, batch_id from archive_warmup.events "
    "where batch_id = 1",
    "create or replace temporary view archive_recent as select *, row_number() over "
    "(partition by user_id order by occurred_at) as n, lag(occurred_at) over (partition by "
    "user_id order by occurred_at) as previous_at from archive_warmup.events",
    "select user_id, window(occurred_at, '5 minutes').start as minute, count(*), "
    "sum(n), max(previous_at), approx_count_distinct(payload), "
    "get_json_object(max(payload), '$.n') from archive_recent group by all",
    "select a.user_id, count(distinct b.id) from archive_warmup.events a left join "
    "archive_warmup.events b on a.user_id = b.user_id and b.occurred_at between "
    "a.occurred_at - interval 1 hour and a.occurred_at group by a.user_id",
    "select session_window(occurred_at, '30 minutes'), count(*) from archive_warmup.events "
    "group by user_id, session_window(occurred_at, '30 minutes')",
    "describe extended archive_warmup.events",
    "show table extended in archive_warmup like 'events'",
    "show partitions archive_warmup.events",
    "alter table archive_warmup.events drop if exists partition (batch_id = 2)",
    "drop database archive_warmup cascade",
)


def write_archive(
    archive: Path, profiles_dir: Path, fast_start: dict[str, str], target: str = "local"
) -> int:
    """Start Spark as `target` does, with the fast start's settings `fast_start` (its class
    path: the JVM maps an archive only for a class path that begins as this one) and
    `-XX:ArchiveClassesAtExit=archive`, in a scratch directory; run WORKLOAD; end the JVM and
    wait for it to write the archive. Returns the archive's size in bytes."""
    output = profile_output(profiles_dir, target)
    settings = {**(output.get("server_side_parameters") or {}), **fast_start}
    # (the JVM names each class it cannot archive, such as those of signed jars: not errors)
    settings["spark.driver.defaultJavaOptions"] = (
        f"-XX:ArchiveClassesAtExit={archive} -Xlog:cds=error -Xlog:cds+dynamic=error"
    )
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.unlink(missing_ok=True)
    previous = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="kappa-shop-class-archive-") as scratch:
        # the warm-up's own metastore and warehouse
        os.chdir(scratch)
        prepare_scratch_directory(Path(scratch), profiles_dir)
        try:
            spark = session_for_output({**output, "server_side_parameters": settings}, target)
            for statement in WORKLOAD:
                spark.sql(statement).collect()
            pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
            spark.stop()
            # the JVM writes the archive as it exits (py4j loses its connection: expected)
            with contextlib.suppress(Exception):
                spark._jvm.java.lang.System.exit(0)
            _wait_for_exit(pid, timeout=300)
        finally:
            os.chdir(previous)
    if not archive.is_file() or archive.stat().st_size == 0:
        raise KappaShopError(f"the JVM wrote no class archive to {archive}")
    return archive.stat().st_size


# How the JVM's VM.info reports the class-data archives it mapped (the JDK's own, plus a
# dynamic archive when it uses one): their address ranges and total size in bytes
_MAPPED = re.compile(r"^CDS archive\(s\) mapped at: \[[^\]]*\), size (\d+)", re.M)


def archive_status(spark: Any) -> tuple[str | None, bool | None]:
    """The class archive that Spark's running JVM was started with (-XX:SharedArchiveFile),
    and whether it maps it: None for either when there is none or it cannot be told.

    The JVM says nothing when it cannot use an archive (the profile silences it), so this asks
    it, through the JDK's `jcmd PID VM.info` (under a second): its report gives the total size
    of the archives the JVM mapped, the JDK's own (some 13 MB) plus ours (about 200 MB) when
    ours is in use. A Java without jcmd (a runtime, not a JDK) cannot tell."""
    jvm = spark._jvm
    runtime = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    named = [
        str(argument).split("=", 1)[1]
        for argument in runtime.getInputArguments()
        if str(argument).startswith("-XX:SharedArchiveFile=")
    ]
    if not named:
        return None, None
    archive = named[-1]
    jcmd = Path(str(jvm.java.lang.System.getProperty("java.home"))) / "bin" / "jcmd"
    if not jcmd.is_file():  # a runtime without the JDK's tools: the JDK on PATH, if any
        jcmd = Path(shutil.which("jcmd") or jcmd)
    pid = str(jvm.java.lang.ProcessHandle.current().pid())
    try:
        report = subprocess.run(
            [str(jcmd), pid, "VM.info"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return archive, None
    if re.search(r"^CDS archive\(s\) not mapped", report, re.M):
        return archive, False  # (the JVM turned class-data sharing off altogether)
    mapped = _MAPPED.search(report)
    if mapped is None:
        return archive, None
    if not Path(archive).is_file():
        return archive, False
    return archive, int(mapped[1]) >= Path(archive).stat().st_size


def _wait_for_exit(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() > deadline:
            raise KappaShopError(f"Spark's JVM (pid {pid}) did not exit in {timeout:.0f} s")
        time.sleep(0.2)
