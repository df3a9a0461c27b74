"""A Spark cluster on this machine, from the pip install of PySpark alone: a standalone master,
two workers and a Spark Thrift Server running as an application on that master.

It is the stand-in for a real cluster: the `cluster` dbt target (method: thrift) talks to the
Thrift Server, and ingestion runs as an application on the master, exactly as they would
against a cluster elsewhere. Everything binds to 127.0.0.1. The Thrift Server runs with Delta
Lake's jars, session extension and catalog, as the `local_delta` target's Spark does: the
`cluster_delta` target builds the models as Delta tables on it, `cluster` as parquet (Delta's
catalog hands every table that is not a Delta table to Spark's own).

    kappa-shop cluster up       start what is not running, wait until it answers
    kappa-shop cluster status   what runs, on which ports, where the logs are
    kappa-shop cluster down     stop it all (and the executors), by process id

State lives in `.cluster/` in the project (git-ignored): `cluster.json` (ports and process
ids), `logs/`, the workers' `work/` directories, the Thrift Server's Hive metastore (Derby,
`metastore_db/`) and its warehouse (`warehouse/`), which ingestion shares (same machine, same
file system; a real cluster needs shared storage instead).

Ports come from the `cluster` target in profiles.yml (KAPPA_SHOP_THRIFT_PORT, the port of
KAPPA_SHOP_SPARK_MASTER), so dbt and ingestion find what `up` started; the web UIs take
`--ui-port` and the next three ports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.delta import class_path_jars, fetch_jars
from kappa_shop.runtime.jars import MAVEN_REPOSITORY, spark_home
from kappa_shop.runtime.processes import (
    LOOPBACK,
    listening,
    log_tail,
    port_taken,
    process_alive,
    processes_under,
    runs_main_class,
    stop_process,
)

LOCAL_HOSTS = ("127.0.0.1", "localhost")
STATE_FILE = "cluster.json"
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKERS = 2


@dataclass
class ClusterSettings:
    """What `up` starts: ports, sizes, where the state lives."""

    home: Path
    master_port: int = 7077
    thrift_port: int = 10000
    ui_port: int = 8180
    worker_cores: int = 2
    worker_memory: str = "3g"
    thrift_driver_memory: str = "4g"
    thrift_executor_memory: str = "2g"
    thrift_cores: int = 2

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"

    @property
    def logs(self) -> Path:
        return self.home / "logs"


@dataclass
class Component:
    """One process of the cluster."""

    name: str
    main_class: str
    ports: dict[str, int]
    command: list[str]
    log: str
    pid: int | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def settings_from_profile(output: dict[str, Any], home: Path, ui_port: int) -> ClusterSettings:
    """Ports from the rendered `cluster` output, checked to be on this machine."""
    host = str(output.get("host"))
    if host not in LOCAL_HOSTS:
        raise KappaShopError(
            f"the cluster target points at the Thrift Server on {host} "
            "(KAPPA_SHOP_THRIFT_HOST); `kappa-shop cluster` starts a cluster on 127.0.0.1 only"
        )
    master = str((output.get("ingestion_spark_conf") or {}).get("spark.master", ""))
    prefix = "spark://"
    master_host, _, master_port = master[len(prefix) :].partition(":")
    if not master.startswith(prefix) or master_host not in LOCAL_HOSTS or not master_port:
        raise KappaShopError(
            f"the cluster target's ingestion master is {master!r} (KAPPA_SHOP_SPARK_MASTER); "
            "`kappa-shop cluster` starts one at spark://127.0.0.1:<port> only"
        )
    return ClusterSettings(
        home=home,
        master_port=_port(master_port, "KAPPA_SHOP_SPARK_MASTER"),
        thrift_port=_port(output.get("port"), "KAPPA_SHOP_THRIFT_PORT"),
        ui_port=_port(ui_port, "--ui-port"),
    )


def _port(value: object, name: str) -> int:
    try:
        port = int(str(value))
    except ValueError:
        port = -1
    if not 1024 <= port <= 65535:
        raise KappaShopError(f"{name}: {value!r} is not a port number from 1024 to 65535")
    return port


# The one jar the Thrift Server needs that the PySpark wheel does not ship: Hive's function
# registry (initialized when a Thrift session that used the metastore closes) loads a class of
# hive-llap-common, and without it that close fails once with NoClassDefFoundError (and the
# registry never initializes: SPARK-51041). The full Spark distribution ships the jar.
def hive_llap_common_jar() -> Path:
    """Where the cached hive-llap-common jar of the wheel's Hive version lives (it may not)."""
    versions = [path.name for path in (spark_home() / "jars").glob("hive-exec-*-core.jar")]
    version = versions[0].removeprefix("hive-exec-").removesuffix("-core.jar") if versions else ""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kappa-shop"
    return cache / "jars" / f"hive-llap-common-{version}.jar"


def fetch_hive_llap_common(progress: Callable[[str], None] = print) -> Path | None:
    """The hive-llap-common jar, downloaded from Maven Central once (checked against its
    SHA-1) and cached; None, after one warning line, when it cannot be fetched."""
    import hashlib

    jar = hive_llap_common_jar()
    if jar.is_file():
        return jar
    version = jar.stem.removeprefix("hive-llap-common-")
    url = f"{MAVEN_REPOSITORY}/org/apache/hive/hive-llap-common/{version}/{jar.name}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            content = response.read()
        with urllib.request.urlopen(url + ".sha1", timeout=30) as response:
            expected = response.read().decode().split()[0].strip()
    except (OSError, ValueError) as error:
        progress(
            f"  warning: cannot fetch {url} ({error}); the Thrift Server starts without it and "
            "may fail to close its first session (NoClassDefFoundError ... LlapSigner)"
        )
        return None
    if hashlib.sha1(content).hexdigest() != expected:
        progress(f"  warning: {url} does not match its SHA-1; not used")
        return None
    jar.parent.mkdir(parents=True, exist_ok=True)
    partial = jar.with_name(f".{jar.name}.partial")
    partial.write_bytes(content)
    os.replace(partial, jar)
    progress(f"  fetched {jar.name} for the Thrift Server (cached in {jar.parent})")
    return jar


def plan(settings: ClusterSettings, conf_dir: Path) -> list[Component]:
    """The processes of the cluster, in start order."""
    spark = spark_home()
    return [
        _master(settings, spark),
        *(_worker(settings, spark, number) for number in range(1, WORKERS + 1)),
        _thrift_server(settings, conf_dir, spark),
    ]


def _master(settings: ClusterSettings, spark: Path) -> Component:
    """The standalone master, on its RPC port and web UI port."""
    ui = settings.ui_port
    return Component(
        "master",
        MASTER_CLASS,
        {"rpc": settings.master_port, "web UI": ui},
        [
            str(spark / "bin" / "spark-class"),
            MASTER_CLASS,
            "--host",
            LOOPBACK,
            "--port",
            str(settings.master_port),
            "--webui-port",
            str(ui),
        ],
        "master.log",
        env={"SPARK_DAEMON_MEMORY": "512m"},
    )


def _worker(settings: ClusterSettings, spark: Path, number: int) -> Component:
    """Worker `number` (from 1), with a work directory of its own."""
    ui = settings.ui_port
    work = settings.home / "work" / f"worker-{number}"
    return Component(
        f"worker-{number}",
        WORKER_CLASS,
        {"web UI": ui + number},
        [
            str(spark / "bin" / "spark-class"),
            WORKER_CLASS,
            settings.master_url,
            "--host",
            LOOPBACK,
            "--cores",
            str(settings.worker_cores),
            "--memory",
            settings.worker_memory,
            "--webui-port",
            str(ui + number),
            "--work-dir",
            str(work),
        ],
        f"worker-{number}.log",
        cwd=str(work),
        env={"SPARK_DAEMON_MEMORY": "512m"},
    )


def _thrift_server(settings: ClusterSettings, conf_dir: Path, spark: Path) -> Component:
    """The Spark Thrift Server, an application on the master, with the `local` target's
    session behaviour, Delta Lake's jars, extension and catalog (the `local_delta` target's,
    at the installed delta-spark's version: its jars from Ivy's cache), and the settings a
    long-lived server needs."""
    ui = settings.ui_port
    thrift_ui = ui + WORKERS + 1
    java_options = (
        f"-Duser.timezone=UTC -Dderby.stream.error.file={settings.logs / 'derby.log'} "
        f"-Dlog4j2.configurationFile={conf_dir / 'log4j2.properties'}"
    )
    server_conf = {
        "spark.executor.memory": settings.thrift_executor_memory,
        "spark.executor.cores": "1",
        # leave cores for ingestion's application: one takes every free core otherwise
        "spark.cores.max": str(settings.thrift_cores),
        "spark.sql.warehouse.dir": str(settings.warehouse),
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        # the same behaviour as the `local` target (profiles.yml sets these per session too)
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.hive.metastorePartitionPruning": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
        # the fixed costs per statement that profiles.yml's `local` target cuts (a metastore
        # connection per new planning thread, code compiled again, the recorded plan)
        "spark.sql.shuffleExchange.maxThreadThreshold": "32",
        "spark.sql.codegen.cache.maxEntries": "2000",
        "spark.sql.codegen.useIdInClassName": "false",
        "spark.sql.ui.explainMode": "simple",
        # Delta Lake, as on the local_delta target (profiles.yml): Delta's catalog hands every
        # table that is not a Delta table (the raw tables, parquet models) to Spark's own
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.databricks.delta.snapshotPartitions": "2",
        # each statement runs inside the request that sends it, instead of in the background
        # while the client polls: dbt-spark polls every `poll_interval` seconds (a whole
        # second at least), so a statement of 50 ms took a second; now its first poll finds
        # it done. (A server behind a proxy that drops long requests needs the default.)
        "spark.sql.hive.thriftServer.async": "false",
        # every executor reads the same disk: never hold a task back waiting for locality
        "spark.locality.wait": "0s",
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.ui.port": str(thrift_ui),
        # a long-lived server: keep what its web UI remembers bounded (the driver's heap)
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.sql.ui.retainedExecutions": "100",
        "spark.sql.thriftServer.ui.retainedStatements": "100",
        "spark.sql.thriftServer.ui.retainedSessions": "50",
        "spark.ui.showConsoleProgress": "false",
    }
    command = [
        str(spark / "bin" / "spark-submit"),
        "--class",
        THRIFT_SERVER_CLASS,
        "--master",
        settings.master_url,
        "--name",
        "kappa_shop_thrift_server",
        "--driver-memory",
        settings.thrift_driver_memory,
    ]
    # Delta's jars on the driver's class path itself, not added by `--packages`: the server
    # runs statements in threads whose class loader does not see jars added at run time (a
    # NoClassDefFoundError of Delta's optimizer rules); `--jars` ships them to the executors
    delta_jars = [str(jar) for jar in class_path_jars(metadata.version("delta-spark"))]
    driver_jars = [*delta_jars]
    if hive_llap_common_jar().is_file():
        driver_jars.append(str(hive_llap_common_jar()))
    command += ["--driver-class-path", ":".join(driver_jars), "--jars", ",".join(delta_jars)]
    for key, value in server_conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [
        "--hiveconf",
        f"hive.server2.thrift.port={settings.thrift_port}",
        "--hiveconf",
        f"hive.server2.thrift.bind.host={LOOPBACK}",
        "spark-internal",
    ]
    return Component(
        "thrift-server",
        THRIFT_SERVER_CLASS,
        {"thrift": settings.thrift_port, "web UI": thrift_ui},
        command,
        "thrift-server.log",
        # the Hive metastore (Derby, metastore_db/) is created in the working directory
        cwd=str(settings.home),
    )


def _environment(settings: ClusterSettings, conf_dir: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(settings.logs),
            "SPARK_WORKER_DIR": str(settings.home / "work"),
            "SPARK_CONF_DIR": str(conf_dir),
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    # The master and workers are small daemons. The launcher also sizes the Thrift Server's
    # driver from SPARK_DAEMON_MEMORY when set, over --driver-memory: so never for it.
    environment.pop("SPARK_DAEMON_MEMORY", None)
    environment.pop("SPARK_MASTER_HOST", None)
    return environment


# --- process bookkeeping -------------------------------------------------------------------


def _read_state(home: Path) -> dict[str, Component]:
    path = home / STATE_FILE
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())["components"]
    except (ValueError, KeyError):
        return {}
    return {entry["name"]: Component(**entry) for entry in entries}


def _write_state(home: Path, components: list[Component]) -> None:
    path = home / STATE_FILE
    hidden = path.with_name(f".{STATE_FILE}.partial")
    entries = [{**asdict(component), "env": {}} for component in components]
    hidden.write_text(json.dumps({"components": entries}, indent=2) + "\n")
    os.replace(hidden, path)


# --- the commands ----------------------------------------------------------------------------


def up(
    settings: ClusterSettings,
    conf_dir: Path,
    timeout: float = 180.0,
    progress: Callable[[str], None] = print,
) -> list[Component]:
    """Start every component that is not running, then wait until all of them answer."""
    for directory in (settings.home, settings.logs, settings.warehouse):
        directory.mkdir(parents=True, exist_ok=True)
    previous = _read_state(settings.home)
    fetch_hive_llap_common(progress)
    fetch_jars()  # Delta's, into Ivy's cache (`make setup` did), so the server starts offline
    components = plan(settings, conf_dir)
    running = {
        component.name: previous[component.name]
        for component in components
        if component.name in previous
        and runs_main_class(previous[component.name].pid, component.main_class)
    }
    if len(running) == len(components):
        changed = [
            name for name, old in running.items() if old.ports != _by_name(components)[name].ports
        ]
        if changed:
            raise KappaShopError(
                f"the cluster in {settings.home} runs with other ports ({', '.join(changed)}): "
                "`kappa-shop cluster down` first, then up with the new settings"
            )
        _wait_healthy(settings, list(running.values()), timeout, progress)
        progress(f"The cluster is already running ({len(running)} processes); nothing started.")
        return list(running.values())

    to_start = [component for component in components if component.name not in running]
    for component in to_start:
        for label, port in component.ports.items():
            if port_taken(port):
                raise KappaShopError(
                    f"cannot start the {component.name}: port {port} ({label}) on {LOOPBACK} is "
                    f"taken by another process. Free it, or pick other ports: {_port_hint(label)}"
                )
    environment = _environment(settings, conf_dir)
    started: list[Component] = []
    try:
        for component in components:
            if component.name in running:
                component.pid = running[component.name].pid
                progress(f"  {component.name}: already running (pid {component.pid})")
                continue
            _start(component, settings, environment)
            started.append(component)
            _write_state(settings.home, components)
            progress(
                f"  {component.name}: started (pid {component.pid}, "
                + ", ".join(f"{label} {port}" for label, port in component.ports.items())
                + ")"
            )
            if component.name == "master":
                _wait_for(
                    lambda: _master_json(settings) is not None,
                    component,
                    settings,
                    timeout,
                    "the master's web UI",
                )
        _wait_healthy(settings, components, timeout, progress)
    except BaseException:
        # leave nothing half-started behind: stop what this call started
        for component in reversed(started):
            stop_process(int(component.pid or 0), 30.0)
            component.pid = None
        _write_state(settings.home, components)
        raise
    return components


def _start(component: Component, settings: ClusterSettings, environment: dict[str, str]) -> None:
    if component.cwd:
        Path(component.cwd).mkdir(parents=True, exist_ok=True)
    with open(settings.logs / component.log, "ab") as log:
        process = subprocess.Popen(
            component.command,
            cwd=component.cwd or str(settings.home),
            env={**environment, **component.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command; `down` stops it by pid
        )
    component.pid = process.pid


def _by_name(components: list[Component]) -> dict[str, Component]:
    return {component.name: component for component in components}


def _port_hint(label: str) -> str:
    if label == "thrift":
        return "KAPPA_SHOP_THRIFT_PORT=<port>"
    if label == "rpc":
        return "KAPPA_SHOP_SPARK_MASTER=spark://127.0.0.1:<port>"
    return "--ui-port <port> (the web UIs take it and the next three)"


def _master_json(settings: ClusterSettings) -> dict[str, Any] | None:
    """The master's state from its web UI (straight to loopback, never through a proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{LOOPBACK}:{settings.ui_port}/json/", timeout=3) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def _alive_workers(settings: ClusterSettings) -> int:
    state = _master_json(settings) or {}
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


def _thrift_answers(settings: ClusterSettings) -> bool:
    from kappa_shop.runtime.warehouse import open_thrift

    if not listening(settings.thrift_port):
        return False
    try:
        warehouse = open_thrift(
            {"host": LOOPBACK, "port": settings.thrift_port, "schema": "default"}, "cluster"
        )
    except KappaShopError:
        return False
    try:
        return warehouse.sql("select 1 as one")[0]["one"] == 1
    except KappaShopError:
        return False
    finally:
        warehouse.close()


def _wait_for(
    check: Callable[[], bool],
    component: Component,
    settings: ClusterSettings,
    timeout: float,
    what: str,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_alive(int(component.pid or 0)):
            raise KappaShopError(
                f"the {component.name} exited while starting; the end of "
                f"{settings.logs / component.log}:\n{log_tail(settings.logs / component.log)}"
            )
        if check():
            return
        time.sleep(1)
    raise KappaShopError(
        f"{what} did not answer within {timeout:.0f} s (the {component.name} runs as pid "
        f"{component.pid}; see {settings.logs / component.log}, or `kappa-shop cluster down`)"
    )


def _wait_healthy(
    settings: ClusterSettings,
    components: list[Component],
    timeout: float,
    progress: Callable[[str], None],
) -> None:
    named = _by_name(components)
    start = time.monotonic()
    _wait_for(
        lambda: _master_json(settings) is not None,
        named["master"],
        settings,
        timeout,
        "the master's web UI",
    )
    for number in range(1, WORKERS + 1):
        worker = named[f"worker-{number}"]
        _wait_for(
            lambda: _alive_workers(settings) >= WORKERS,
            worker,
            settings,
            timeout,
            f"{WORKERS} workers registered with the master",
        )
    _wait_for(
        lambda: _thrift_answers(settings),
        named["thrift-server"],
        settings,
        timeout,
        f"the Thrift Server on {LOOPBACK}:{settings.thrift_port}",
    )
    progress(
        f"Cluster up in {time.monotonic() - start:.0f} s: master {settings.master_url} "
        f"(web UI http://{LOOPBACK}:{settings.ui_port}), {WORKERS} workers, Thrift Server "
        f"{LOOPBACK}:{settings.thrift_port} (jdbc:hive2://{LOOPBACK}:{settings.thrift_port}). "
        f"Logs: {settings.logs}"
    )


def status(home: Path, progress: Callable[[str], None] = print) -> bool:
    """Print what runs; True when every component runs."""
    state = _read_state(home)
    if not state:
        progress(f"No cluster has been started from {home} (`kappa-shop cluster up`).")
        return False
    all_up = True
    for component in state.values():
        alive = runs_main_class(component.pid, component.main_class)
        all_up &= alive
        ports = ", ".join(
            f"{label} {port}" + ("" if listening(port) else " (not listening)")
            for label, port in component.ports.items()
        )
        progress(
            f"  {component.name:<14} {'running' if alive else 'stopped':<8} "
            f"pid {component.pid or '-':<8} {ports}"
        )
    progress(f"Logs: {home / 'logs'}")
    return all_up


def down(home: Path, timeout: float = 60.0, progress: Callable[[str], None] = print) -> int:
    """Stop every process of the cluster (newest first), then any executor left; returns how
    many processes were stopped."""
    state = _read_state(home)
    targets: list[tuple[str, int]] = []
    for component in reversed(list(state.values())):
        if runs_main_class(component.pid, component.main_class):
            targets.append((component.name, int(component.pid or 0)))
    stopped = 0
    for name, pid in targets:
        stopped += stop_process(pid, timeout)
        progress(f"  {name}: stopped (pid {pid})")
    home = home.resolve()
    strays = processes_under(home) if home.is_dir() else []
    for pid in strays:
        stopped += stop_process(pid, timeout)
        progress(f"  stopped pid {pid} (ran in {home}: an executor or a leftover)")
    if state:
        _write_state(home, [Component(**{**asdict(c), "pid": None}) for c in state.values()])
    progress("The cluster is down." if stopped else "Nothing was running.")
    return stopped
