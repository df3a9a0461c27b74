"""The `cluster` target on a real Spark cluster: `kappa-shop cluster up` starts a standalone
master, two workers and a Thrift Server on 127.0.0.1 (from the pip install of PySpark), the
proof runs on it unchanged, the same log gives the same tables as on `local`, ingestion from
a Kafka broker runs there exactly once through a SIGKILL, bad settings fail fast in one line,
and `cluster down` leaves no process behind.

Everything here runs the real command line in subprocesses, in a copy of the project with
ports of its own (so a cluster someone left running on the default ports is not touched). The
module's fixture stops the cluster by pid even when a test fails.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    IMPERFECT_LOG,
    SMALL_PROOF,
    TRACED_PATHS,
    copy_project,
    free_ports,
    kill_inside_batch,
    listening_addresses,
    subprocess_environment,
)
from log_oracle import landed_lines

from kappa_shop.log.format import TOPICS
from kappa_shop.log.generator import generate
from kappa_shop.runtime.contract import RUN_LOCK_TABLE
from kappa_shop.runtime.warehouse import (
    SessionWarehouse,
    Warehouse,
    checksums,
    open_thrift,
    table_names,
)

# (`make test` runs this module with the rest; `make test-cluster` runs it alone: README, "Tests")
pytestmark = [pytest.mark.spark, pytest.mark.cluster]

# columns that hold wall-clock times (of ingestion, of a ledger entry): the one thing two runs
# over the same log do not share
WALL_CLOCK_COLUMNS = {"_ingested_at", "ingested_at", "recorded_at"}


@dataclass
class Cluster:
    root: Path
    environment: dict[str, str]
    thrift_port: int
    master_port: int
    ui_port: int

    def run(self, *arguments: str, timeout: float = 600, **overrides: str):
        environment = {**self.environment, **overrides}
        return _kappa_shop(self.root, environment, *arguments, timeout=timeout)

    def pids(self) -> dict[str, int]:
        path = self.root / ".cluster" / "cluster.json"
        if not path.is_file():
            return {}
        state = json.loads(path.read_text())
        return {entry["name"]: entry["pid"] for entry in state["components"]}


def _kappa_shop(root: Path, environment: dict[str, str], *arguments, timeout=600.0):
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), *arguments]
    return subprocess.run(
        [str(part) for part in command],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _spark_processes_in(directory: Path) -> list[int]:
    """Spark processes working inside `directory` (what `down` must leave none of)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            command_line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        inside = cwd == directory or directory in cwd.parents
        if inside and b"org.apache.spark" in command_line and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    root = copy_project(tmp_path_factory.mktemp("cluster") / "kappa_shop")
    # six free ports in a row: four web UIs, the master, the Thrift Server
    ui_port = free_ports(6)
    master_port, thrift_port = ui_port + 4, ui_port + 5
    environment = subprocess_environment(
        root,
        KAPPA_SHOP_THRIFT_PORT=str(thrift_port),
        KAPPA_SHOP_SPARK_MASTER=f"spark://127.0.0.1:{master_port}",
        KAPPA_SHOP_CLUSTER_UI_PORT=str(ui_port),
    )
    handle = Cluster(root, environment, thrift_port, master_port, ui_port)
    try:
        started = handle.run("cluster", "up", timeout=400)
        assert started.returncode == 0, started.stdout + started.stderr
        yield handle
    finally:
        # stop by pid even when a test failed; then make sure, pid by pid
        handle.run("cluster", "down", timeout=300)
        for pid in [*handle.pids().values(), *_spark_processes_in(root / ".cluster")]:
            if _alive(pid):
                os.kill(pid, 9)


def test_up_starts_master_workers_and_thrift_server_on_loopback_and_is_idempotent(cluster):
    pids = cluster.pids()
    assert set(pids) == {"master", "worker-1", "worker-2", "thrift-server"}
    assert all(_alive(pid) for pid in pids.values()), pids
    # the Thrift Server has the one Hive jar the wheel lacks (it closes sessions with it)
    command_line = Path(f"/proc/{pids['thrift-server']}/cmdline").read_bytes()
    assert b"hive-llap-common-" in command_line

    status = cluster.run("cluster", "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("running") == 4, status.stdout

    # every listening socket of the cluster's processes (executors included) is on loopback
    processes = [*pids.values(), *_spark_processes_in(cluster.root / ".cluster")]
    addresses = listening_addresses(processes)
    assert addresses, "the cluster listens nowhere?"
    assert addresses <= {"127.0.0.1", "::ffff:127.0.0.1"}, addresses

    again = cluster.run("cluster", "up")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already running" in again.stdout
    assert cluster.pids() == pids

    check = cluster.run("check", "--target", "cluster")
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"answers at 127.0.0.1:{cluster.thrift_port}" in check.stdout
    # the same server for the Delta target: it runs Delta Lake's extension
    check = cluster.run("check", "--target", "cluster_delta")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "'cluster_delta': the Thrift Server runs Delta Lake" in check.stdout


def test_up_refuses_a_taken_port_or_a_missing_java_in_one_line(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        environment = subprocess_environment(
            root,
            KAPPA_SHOP_SPARK_MASTER=f"spark://127.0.0.1:{port}",
            KAPPA_SHOP_CLUSTER_UI_PORT=str(free_ports(4)),
        )
        result = _kappa_shop(root, environment, "cluster", "up", timeout=120)

    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert f"port {port} (rpc) on 127.0.0.1 is taken" in result.stderr
    assert "KAPPA_SHOP_SPARK_MASTER" in result.stderr
    assert not _spark_processes_in(root / ".cluster")

    no_java = {**environment, "PATH": str(Path(sys.executable).parent)}
    no_java.pop("JAVA_HOME", None)
    result = _kappa_shop(root, no_java, "cluster", "up", timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "Spark needs Java 17" in result.stderr


def test_bad_settings_fail_fast_with_one_line_naming_the_target(cluster):
    def one_line_failure(*arguments: str, **overrides: str) -> str:
        started = time.monotonic()
        result = cluster.run(*arguments, timeout=120, **overrides)
        assert result.returncode == 1, result.stdout + result.stderr
        assert time.monotonic() - started < 60
        assert result.stderr.strip().count("\n") == 0, result.stderr
        assert "target 'cluster'" in result.stderr
        return result.stderr

    nobody = str(free_ports(1))
    assert int(nobody) not in range(cluster.ui_port, cluster.ui_port + 6)
    message = one_line_failure("check", "--target", "cluster", KAPPA_SHOP_THRIFT_PORT=nobody)
    assert f"no Spark Thrift Server answers at 127.0.0.1:{nobody}" in message
    assert "kappa-shop cluster up" in message

    # a port where something answers that is not a Thrift Server: the master's web UI (HTTP)
    # and its RPC port
    for wrong in (cluster.ui_port, cluster.master_port):
        message = one_line_failure(
            "check", "--target", "cluster", KAPPA_SHOP_THRIFT_PORT=str(wrong)
        )
        assert "the handshake failed" in message

    (cluster.root / "data" / "landing" / "topics").mkdir(parents=True, exist_ok=True)
    message = one_line_failure(
        "ingest",
        "--target",
        "cluster",
        "--landing",
        str(cluster.root / "data" / "landing"),
        KAPPA_SHOP_SPARK_MASTER=f"spark://127.0.0.1:{nobody}",
    )
    assert f"no Spark master answers at spark://127.0.0.1:{nobody}" in message

    message = one_line_failure("check", "--target", "cluster", KAPPA_SHOP_SCHEMA="not-a-name")
    assert "schema 'not-a-name' is not a plain name" in message

    # a schema that holds no raw tables: plain dbt stops before any model, with one message
    dbt = Path(sys.executable).parent / "dbt"
    result = subprocess.run(
        [str(dbt), "run", "--target", "cluster"],
        cwd=cluster.root,
        env={**cluster.environment, "KAPPA_SHOP_SCHEMA": "nothing_here"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "target 'cluster' (schema nothing_here): the raw table(s) nothing_here_raw." in (
        result.stdout
    )
    assert "OK created" not in result.stdout


def test_the_proof_holds_on_the_cluster(cluster):
    result = cluster.run(
        "verify",
        "--target",
        "cluster",
        "--seeds",
        str(SMALL_PROOF.seed),
        "--events",
        str(SMALL_PROOF.events),
        "--rounds",
        str(SMALL_PROOF.rounds),
        "--days",
        str(SMALL_PROOF.days),
        # the diff alone: the data tests run on Delta's full refresh of the same log, which
        # test_the_same_log_gives_the_same_tables_on_local_and_cluster finds equal to this one's
        "--data-tests",
        "none",
        "--selector",
        SMALL_PROOF.selector,
        # no round built twice, no replay: the writes' SQL is parquet's, which test_verify's
        # proof repeats; what this one adds is the Thrift Server and the cluster
        "--no-repeats",
        timeout=1800,
    )

    print(result.stdout[-6000:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"Proof PASSED (seed {SMALL_PROOF.seed})" in result.stdout
    # the cluster really did the work: the Thrift Server's warehouse holds the tables, and
    # ingestion ran as an application on the master
    warehouse = cluster.root / ".cluster" / "warehouse"
    assert (warehouse / f"verify_{SMALL_PROOF.seed}_full.db" / "orders_daily").is_dir()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{cluster.ui_port}/json/") as response:
        applications = json.loads(response.read())
    names = {app["name"] for app in applications.get("completedapps", [])}
    names |= {app["name"] for app in applications.get("activeapps", [])}
    assert {"kappa_shop_ingest", "kappa_shop_thrift_server"} <= names, names


def _dbt(cluster, *arguments: str, target: str = "cluster") -> list[str]:
    """A dbt command line on the cluster target (or `target`) of the copy."""
    dbt = Path(sys.executable).parent / "dbt"
    root = str(cluster.root)
    return [str(dbt), *arguments, "--target", target, "--project-dir", root,
            "--profiles-dir", root]  # fmt: skip


# a keys model and what it is built from: a batches model on a batches model, then keys
DELTA_MODELS = ["stg_orders__order_event_deliveries", "stg_orders__order_events", "orders_current"]


def test_the_cluster_delta_target_builds_delta_tables_equal_to_parquets(cluster):
    # the same Thrift Server, the models as Delta tables (cluster_delta): built from the
    # proof's raw tables (test_the_proof_holds_on_the_cluster), each one Delta commit, and
    # equal row for row to the proof's parquet full refresh of the same log
    seed = SMALL_PROOF.seed
    schema = f"verify_{seed}_delta"
    raw_vars = ("--vars", json.dumps({"raw_schema": f"verify_{seed}_raw"}))
    environment = {**cluster.environment, "KAPPA_SHOP_SCHEMA": schema}
    built = subprocess.run(
        _dbt(cluster, "run", "--select", "+orders_current", *raw_vars, target="cluster_delta"),
        cwd=cluster.root, env=environment, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:]
    remote = open_thrift(
        {"host": "127.0.0.1", "port": cluster.thrift_port, "schema": "default"}, "cluster"
    )
    try:
        for model in DELTA_MODELS:
            history = remote.sql(f"describe history {schema}.{model}")
            assert [row["operation"] for row in history] == ["CREATE OR REPLACE TABLE AS SELECT"]
        on_delta = checksums(remote, [f"{schema}.{model}" for model in DELTA_MODELS],
                             WALL_CLOCK_COLUMNS)  # fmt: skip
        on_parquet = checksums(remote, [f"verify_{seed}_full.{model}" for model in DELTA_MODELS],
                               WALL_CLOCK_COLUMNS)  # fmt: skip
        assert [on_delta[f"{schema}.{model}"] for model in DELTA_MODELS] == [
            on_parquet[f"verify_{seed}_full.{model}"] for model in DELTA_MODELS
        ]
        assert all(rows > 0 for rows, _ in on_delta.values()), on_delta
    finally:
        remote.close()


def test_a_second_run_of_the_same_schema_is_refused_and_changes_nothing(cluster):
    # runs on the proof's tables (test_the_proof_holds_on_the_cluster)
    schema, raw_vars = (
        f"verify_{SMALL_PROOF.seed}_incremental",
        ("--vars", json.dumps({"raw_schema": f"verify_{SMALL_PROOF.seed}_raw"})),
    )
    environment = {**cluster.environment, "KAPPA_SHOP_SCHEMA": schema, "PYTHONUNBUFFERED": "1"}
    run = _dbt(cluster, "run", "--select", "stg_orders__order_event_deliveries", *raw_vars)
    remote = open_thrift(
        {"host": "127.0.0.1", "port": cluster.thrift_port, "schema": "default"}, "cluster"
    )

    def tables() -> dict[str, tuple[int, int]]:
        return _comparable_checksums(remote, schema)

    before = tables()
    # the first run takes the lock and pauses inside its model (a fault point)
    first = subprocess.Popen(
        run,
        cwd=cluster.root,
        env={**environment, "KAPPA_FAULT_POINT": "stg_orders__order_event_deliveries:before_write"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        seen = []
        assert first.stdout is not None
        for line in first.stdout:
            seen.append(line)
            if "kappa fault point stg_orders__order_event_deliveries:before_write reached" in line:
                break
        else:
            raise AssertionError("".join(seen))

        second = subprocess.run(
            _dbt(cluster, "build", *raw_vars), cwd=cluster.root, env=environment,
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert second.returncode != 0
        assert "is being built by another run (run, run " in second.stdout, second.stdout[-3000:]
        assert "this run changed nothing" in second.stdout
        assert "OK created" not in second.stdout
        assert tables() == before
    finally:
        os.killpg(first.pid, 9)  # the holder crashes: its lock stays behind
        first.wait(timeout=60)

    third = subprocess.run(
        run, cwd=cluster.root, env=environment, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert third.returncode != 0
    assert "If it crashed, its lock expires 360 minutes after it was taken" in third.stdout
    holder = third.stdout.split("release_run_lock --args '{holder: ")[1].split("}")[0]
    released = subprocess.run(
        _dbt(cluster, "run-operation", "release_run_lock", "--args", f"{{holder: {holder}}}"),
        cwd=cluster.root, env=environment, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert released.returncode == 0, released.stdout[-3000:]
    assert f"Released the run lock of {schema} held by run {holder}" in released.stdout

    fourth = subprocess.run(
        run, cwd=cluster.root, env=environment, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert fourth.returncode == 0, fourth.stdout[-3000:]
    assert remote.sql(f"select count(*) as n from {schema}.{RUN_LOCK_TABLE}")[0]["n"] == 0
    assert tables() == before  # no new batch: nothing changed


def _comparable_checksums(warehouse: Warehouse, schema: str) -> dict[str, tuple[int, int]]:
    """Per table: rows and an order-independent checksum of every column but wall-clock times.
    The run lock is left out: it says who is building the schema now, not what it holds."""
    tables = sorted(table_names(warehouse, schema) - {RUN_LOCK_TABLE})
    sums = checksums(warehouse, [f"{schema}.{table}" for table in tables], WALL_CLOCK_COLUMNS)
    return {table: sums[f"{schema}.{table}"] for table in tables}


def test_the_same_log_gives_the_same_tables_on_local_and_cluster(cluster, spark, delta_proof):
    # the same proof (SMALL_PROOF: seed, scale, schedule) on both targets: above on the
    # cluster; on the local target, on Delta, in this process (conftest's delta_proof). The raw
    # tables and the full refreshes are the same on both, column for column (parquet over the
    # Thrift Server and Delta in the session alike); each proof showed its incremental tables
    # equal to its full refresh, so they are equal across the targets too. And the data tests,
    # which ran on Delta's full refresh, give the cluster's tables the same verdict.
    assert delta_proof.report.passed
    assert sorted(diff.model for diff in delta_proof.report.diffs) == TRACED_PATHS
    local = SessionWarehouse(spark)
    remote = open_thrift(
        {"host": "127.0.0.1", "port": cluster.thrift_port, "schema": "default"}, "cluster"
    )
    try:
        prefix = f"verify_{SMALL_PROOF.seed}"
        for schema in (f"{prefix}_raw", f"{prefix}_full"):
            on_local = _comparable_checksums(local, schema)
            on_cluster = _comparable_checksums(remote, schema)
            assert len(on_local) >= 7, (schema, on_local)
            assert on_cluster.keys() == on_local.keys(), schema
            differing = {
                table: (on_local[table], on_cluster[table])
                for table in on_local
                if on_local[table] != on_cluster[table]
            }
            assert not differing, (schema, differing)
            assert sum(rows for rows, _ in on_local.values()) > 300, schema
    finally:
        remote.close()


# a log with every imperfection (late, redelivered, conflicting and malformed records), for
# ingestion from Kafka on the cluster
KAFKA_LOG = dataclasses.replace(IMPERFECT_LOG, seed=23, events=400)


def test_ingestion_from_kafka_on_the_cluster_killed_inside_a_batch_holds_each_record_once(
    cluster, tmp_path
):
    # a broker beside the cluster (`kappa-shop kafka up` in the same project copy), a log
    # produced to it, ingested from Kafka as an application on the cluster's master with a
    # SIGKILL while batch 3 pauses between its raw tables, then ingested again: each record of
    # each topic once in its raw table behind the Thrift Server, at the broker's offset
    kafka_port = free_ports(2)
    schema = "from_kafka"
    settings = {"KAPPA_SHOP_KAFKA_PORT": str(kafka_port), "KAPPA_SHOP_SCHEMA": schema,
                "PYTHONUNBUFFERED": "1"}  # fmt: skip
    environment = {**cluster.environment, **settings}
    log = tmp_path / "log"
    generate(KAFKA_LOG, log, progress=lambda message: None)
    ingest = ("ingest", "--kafka", "--target", "cluster", "--topic-prefix", "shop.")
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(cluster.root), *ingest]
    try:
        started = cluster.run("kafka", "up", timeout=300, **settings)
        assert started.returncode == 0, started.stdout + started.stderr
        produced = cluster.run("produce", "--topic-prefix", "shop.", "--log", str(log), "--all",
                               **settings)  # fmt: skip
        assert produced.returncode == 0, produced.stdout + produced.stderr
        raw_dir = cluster.root / ".cluster" / "warehouse" / f"{schema}_raw.db"
        kill_inside_batch(
            [*command, "--max-files-per-batch", "150", "--pause-between-writes", "1"],
            cluster.root,
            environment,
            raw_dir,
        )
        again = cluster.run(*ingest, **settings)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert "ingestion batch 3:" in again.stdout  # the interrupted batch, replayed
    finally:
        cluster.run("kafka", "down", **settings)
    produced_per_topic = Counter(line.topic for line in landed_lines(log))
    remote = open_thrift(
        {"host": "127.0.0.1", "port": cluster.thrift_port, "schema": "default"}, "cluster"
    )
    try:
        for topic in TOPICS:
            counts = remote.sql(
                "select count(*) as total, count(distinct topic, partition, offset) as distinct,"
                " count_if(topic != 'shop." + topic.name + "') as elsewhere from ("
                "select get_json_object(raw_record, '$.topic') as topic,"
                " get_json_object(raw_record, '$.partition') as partition,"
                " get_json_object(raw_record, '$.offset') as offset"
                f" from {schema}_raw.{topic.raw_table})"
            )[0]
            assert counts == {
                "total": produced_per_topic[topic.name],
                "distinct": produced_per_topic[topic.name],
                "elsewhere": 0,
            }, topic.name
        receipts = remote.sql(
            "select ingestion_batch_id, landed_record_count"
            f" from {schema}_raw.raw_ingestion_batches order by ingestion_batch_id"
        )
    finally:
        remote.close()
    assert [row["ingestion_batch_id"] for row in receipts] == list(range(1, len(receipts) + 1))
    assert len(receipts) >= 4
    assert sum(row["landed_record_count"] for row in receipts) == sum(produced_per_topic.values())


def test_down_stops_every_process_and_frees_the_ports(cluster):
    pids = cluster.pids()
    assert all(_alive(pid) for pid in pids.values())

    stopped = cluster.run("cluster", "down", timeout=300)

    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "The cluster is down." in stopped.stdout
    assert not any(_alive(pid) for pid in pids.values())
    assert not _spark_processes_in(cluster.root / ".cluster")
    for port in (cluster.thrift_port, cluster.master_port, cluster.ui_port):
        with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    status = cluster.run("cluster", "status")
    assert status.returncode == 1
    again = cluster.run("cluster", "down")
    assert again.returncode == 0 and "Nothing was running." in again.stdout
