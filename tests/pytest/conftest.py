"""Fixtures that run the project on a real Spark session.

Spark's embedded Derby metastore admits one process per directory, so every pytest run works
in its own copy of the project in a temporary directory. This process starts one
SparkSession there (configured from profiles.yml, as dbt's `local` target is) and every
ingestion and in-process dbt command of the run reuses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kappa_shop.log.generator import GeneratorConfig
from kappa_shop.proof.verify import VerifyConfig
from kappa_shop.runtime.contract import LEDGER_TABLE
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.processes import wait_for_the_group_to_die
from kappa_shop.serving.pipeline import BuildSummary, build

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_COPIED = shutil.ignore_patterns(
    ".venv*", ".git", "target", "logs", "spark-warehouse", "metastore_db", "derby.log",
    "data", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info", ".cluster", ".kafka",
    ".kappa_shop",
)  # fmt: skip
# The proof at a small scale, run on Delta (test_delta, the delta_proof fixture) and on the
# cluster target (test_cluster), whose raw tables and full refresh are then compared with
# Delta's: the same log, schedule and tables on both. The data tests run in Delta's full
# refresh, whose verdict the two diffs carry to the incremental tables and to the cluster's.
# Both build the models of selector one_model_per_mode (one of each mode and write path with
# its parents): what these proofs try is the target; the logic of every model is proven on
# `local` (test_verify). The fault tests build the same models.
# Three rounds: two arrival rounds (a batch of the first overtakes one of the second, which
# first rebuilds an upstream model of each mode alone) and the redelivery; then the reach-edge
# batches and the old day's few late events, over four days (seed 8: its old day has events of
# every stream, profile changes included, so that every model of the selection meets it).
SMALL_PROOF = VerifyConfig(
    seed=8,
    events=600,
    rounds=3,
    days=4.0,
    data_tests="full-refresh",
    selector="traced_paths",
)
# what selectors.yml's one_model_per_mode selects, as its description names them
ONE_MODEL_PER_MODE = sorted(
    (
        "stg_orders__order_event_deliveries", "stg_orders__order_events",  # batches
        "stg_users__profile_change_deliveries", "stg_users__profile_changes",
        "stg_inventory__inventory_change_deliveries", "stg_inventory__inventory_changes",
        "orders_daily", "inventory_levels",  # days; a running total over all earlier days
        "orders_current", "users_history", "users_current", "orders_enriched",  # keys
    )
)  # fmt: skip
# what selectors.yml's traced_paths selects (SMALL_PROOF's): those and a days model over days
# models with its parents
TRACED_PATHS = sorted(
    (
        *ONE_MODEL_PER_MODE,
        "stg_search__search_deliveries", "stg_search__searches",  # batches
        "stg_search__click_deliveries", "stg_search__clicks",
        "int_search_clicks_matched", "search_click_through", "search_ctr_daily",  # days over days
    )
)  # fmt: skip
DELTA_TARGET = "local_delta"
# a small log with more of every imperfection than the generator's defaults (late, redelivered,
# conflicting and malformed records): what the Kafka tests produce to a broker
IMPERFECT_LOG = GeneratorConfig(
    seed=21,
    events=700,
    days=1.0,
    batches=3,
    late_fraction=0.1,
    duplicate_fraction=0.05,
    conflict_fraction=0.02,
    malformed_fraction=0.05,
)


# The fixtures that start Spark, in this process or in a process of their own: every test that
# uses one (directly or through another fixture) is marked `spark`, which `make test-fast`
# leaves out. A test that starts Spark without one of them is marked in its module.
SPARK_FIXTURES = frozenset(
    ("spark", "delta_proof", "format_switch", "faulted", "bench", "cluster", "fast_start_build")
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `spark` every test of this suite that uses a fixture of SPARK_FIXTURES."""
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


def pytest_configure(config: pytest.Config) -> None:
    """The fast start's switch, read as `kappa-shop` reads it (docs/fast-start.md): with
    KAPPA_SHOP_FAST_START=1, every Spark of the run uses the one `make setup` built."""
    from kappa_shop.runtime import fast_start

    fast_start.apply_from_environment()


def copy_project(destination: Path) -> Path:
    """A copy of the repository (sources only), for a process of its own."""
    shutil.copytree(REPO_ROOT, destination, ignore=NOT_COPIED)
    (destination / "logs").mkdir(exist_ok=True)
    return destination


def subprocess_environment(root: Path, **settings: str | None) -> dict[str, str]:
    """The environment of a kappa-shop or dbt subprocess working in the project copy `root`:
    its profiles, Spark bound to loopback, the default schema and target unless `settings`
    say otherwise (a setting of None leaves the variable out)."""
    environment = dict(os.environ)
    environment.update(
        DBT_PROFILES_DIR=str(root),
        SPARK_CONF_DIR=str(root / "conf"),
        SPARK_LOCAL_IP="127.0.0.1",
    )
    for name in ("KAPPA_SHOP_SCHEMA", "KAPPA_SHOP_TARGET"):
        if name not in settings:
            environment.pop(name, None)
    for name, value in settings.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return environment


def run_in(
    root: Path, command: list[str], timeout: float = 600, **settings: str | None
) -> subprocess.CompletedProcess:
    """A command run in the project copy `root`, in its environment (subprocess_environment
    with `settings`), its output captured; the caller checks the exit status."""
    return subprocess.run(
        command,
        cwd=root,
        env=subprocess_environment(root, **settings),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def kill_inside_batch(
    command: list[str], cwd: Path, environment: dict[str, str], raw_dir: Path
) -> str:
    """Run an ingestion command (with --pause-between-writes) in a process group of its own
    and kill the group (Spark's JVM included) with SIGKILL while ingestion batch 3 pauses after
    one of its raw tables, before its receipt; check that the kill landed there (receipts 1
    and 2 only, a raw partition of batch 3); return what the command printed."""
    killed = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    assert killed.stdout is not None
    for line in killed.stdout:
        seen.append(line)
        if "(batch 3); pausing" in line:
            break  # batch 3 has written its first table and is pausing before the next
    os.killpg(killed.pid, signal.SIGKILL)
    assert killed.wait(timeout=60) == -signal.SIGKILL, "".join(seen)
    receipts = {path.name for path in (raw_dir / "raw_ingestion_batches").glob("*=*")}
    assert receipts == {"ingestion_batch_id=1", "ingestion_batch_id=2"}, "".join(seen)
    assert list(raw_dir.glob("raw_*/_ingestion_batch_id=3")), "".join(seen)
    return "".join(seen)


def kappa_shop_in(
    root: Path, *arguments: str, timeout: float = 600, **settings: str | None
) -> subprocess.CompletedProcess:
    """`kappa-shop ARGUMENTS` run in the project copy `root` (see run_in)."""
    return run_in(root, [sys.executable, "-m", "kappa_shop", *arguments], timeout, **settings)


# Runs the `kappa-shop` commands given as JSON one after another in this one process (so in one
# JVM, started by the first command that needs Spark), each preceded by a line naming it; stops
# at the first that does not exit 0, with its status.
_SEQUENCE = """
import json, sys
from kappa_shop.cli import main
for arguments in json.loads(sys.argv[1]):
    print("kappa-shop-sequence: " + json.dumps(arguments), flush=True)
    if arguments[0] == "dbt":  # dbt itself, on the Spark session kappa-shop started
        from dbt.cli.main import dbtRunner
        status = 0 if dbtRunner().invoke(arguments[1:]).success else 1
    elif arguments[0] == "python":  # a test's own Python, on that session; raises or passes
        exec(arguments[1], {"__name__": "kappa_shop_sequence_step"})
        status = 0
    else:
        status = main(arguments)
    sys.stdout.flush()
    if status:
        sys.exit(status)
"""
_SEQUENCE_MARK = re.compile(r"^kappa-shop-sequence: (.*)$", re.MULTILINE)


def kappa_shop_sequence(
    root: Path, *commands: list[str], timeout: float = 1200, **settings: str | None
) -> list[str]:
    """`kappa-shop` commands run one after another in ONE process in the project copy `root`
    (its environment: subprocess_environment with `settings`), as a user's shell runs them but
    paying for one JVM and its warm-up instead of one per command; each must exit 0. A command
    whose first word is `dbt` is dbt's, invoked in the same process after a kappa-shop command
    started Spark (dbt takes that session); `["python", CODE]` runs a test's CODE there (the
    session is SparkSession.builder.getOrCreate()). Returns what each command printed, in
    order."""
    result = run_in(
        root, [sys.executable, "-c", _SEQUENCE, json.dumps(commands)], timeout, **settings
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    parts = _SEQUENCE_MARK.split(result.stdout)
    # parts: what came before the first mark, then (mark, output) pairs
    outputs = parts[2::2]
    assert [json.loads(mark) for mark in parts[1::2]] == [list(c) for c in commands], parts[1::2]
    return outputs


def killed_at(
    root: Path,
    command: list[str],
    marker: str,
    delay: float = 0.0,
    while_running: Callable[[], Any] | None = None,
    **settings: str | None,
) -> tuple[str, Any]:
    """`command` in the project copy `root` (its environment: subprocess_environment with
    `settings`), in a process group of its own, killed with SIGKILL (Spark's JVM included)
    `delay` seconds after it prints a line holding `marker` (and `while_running` has returned,
    if given); returns once the group is gone and the metastore free: what it printed, and
    what `while_running` returned."""
    process = subprocess.Popen(
        command,
        cwd=root,
        env=subprocess_environment(root, PYTHONUNBUFFERED="1", **settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: Spark's JVM dies with it
    )
    seen: list[str] = []
    during = None
    assert process.stdout is not None
    try:
        for line in process.stdout:
            seen.append(line)
            if marker in line:
                time.sleep(delay)
                if while_running is not None:
                    during = while_running()
                break
        else:
            raise AssertionError(f"never reached {marker!r}:\n" + "".join(seen[-60:]))
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        wait_for_the_group_to_die(process.pid, root / "metastore_db")
    assert process.returncode == -signal.SIGKILL, "".join(seen[-60:])
    return "".join(seen), during


@contextlib.contextmanager
def edited(path: Path, old: str, new: str) -> Iterator[None]:
    """`path` with its one `old` replaced by `new`, put back afterwards."""
    original = path.read_text()
    assert original.count(old) == 1, f"{old!r} is not in {path} once"
    path.write_text(original.replace(old, new))
    try:
        yield
    finally:
        path.write_text(original)


def ledger_rows(spark: Any, schema: str, model: str | None = None) -> list[tuple]:
    """The batch ledger of `schema` (of one model's runs if `model` is given), sorted: model,
    first and last batch, refresh mode, when recorded."""
    where = f" where model_name = '{model}'" if model else ""
    rows = spark.sql(
        f"select model_name, first_batch_id, last_batch_id, refresh_mode, recorded_at "
        f"from {schema}.{LEDGER_TABLE}{where}"
    ).collect()
    return sorted(tuple(row) for row in rows)


@dataclass
class BuiltProject:
    """A built copy of the project: where it is, how to run dbt in it, what the build said."""

    root: Path
    dbt: DbtProject
    summary: BuildSummary


@pytest.fixture(scope="session")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The copy this pytest process runs Spark in; no other process touches its metastore."""
    return copy_project(tmp_path_factory.mktemp("project") / "kappa_shop")


def missing_jars(target: str, artifact: str, what: str, plural: bool = False) -> str | None:
    """Why the tests on `target` cannot have `what`, the jars of `artifact` its profile names
    (they are not in Ivy's cache, where `make setup` fetches them), or None when they can."""
    from kappa_shop.runtime.jars import IVY_HOME, cached_jar, package_version
    from kappa_shop.runtime.spark import profile_output

    settings = profile_output(REPO_ROOT, target)["server_side_parameters"]
    version = package_version(settings, artifact) or "?"
    if cached_jar(artifact, version).is_file():
        return None
    are, them = ("are", "them") if plural else ("is", "it")
    return (
        f"{what} ({artifact}:{version}) {are} not in Ivy's cache ({IVY_HOME}), and the tests "
        f"run on {target} too: run `make setup`, which fetches {them}"
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop at once, in one line, when a test that starts Spark is to run and Delta's jars are
    missing (every Spark of the suite has them: the spark fixture), or an Iceberg test is to
    run and Iceberg's runtime is: no test skips."""
    reason = None
    if any(item.get_closest_marker("spark") for item in session.items):
        reason = missing_jars(DELTA_TARGET, "io.delta:delta-spark_2.13", "Delta Lake's jars", True)
    if reason is None and any(item.path.name == "test_iceberg.py" for item in session.items):
        iceberg = "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13"
        reason = missing_jars("local_iceberg", iceberg, "Apache Iceberg's runtime")
    if reason is not None:
        pytest.exit(reason, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def spark(project_copy: Path) -> Iterator[Any]:
    """The one SparkSession of this process, started in the project copy.

    It starts with the settings of the `local_delta` target (those of `local` plus Delta's
    jars, session extension and catalog), so that dbt commands on `local` (parquet) and on
    `local_delta` run in it alike: Delta's catalog hands every table that is not a Delta table
    to Spark's own session catalog, and dbt applies each target's runtime settings to the
    session it finds; and with Spark's Kafka connector (fetched once into
    ~/.cache/kappa-shop), so that the proof from Kafka runs in it too. `local` exactly as `make
    run` starts it, without Delta, runs in the tests' subprocesses (faults, ingestion kills,
    chaos). Delta's jars are a prerequisite (`make setup` fetches them;
    pytest_collection_finish)."""
    from kappa_shop.runtime.kafka import connector_jars
    from kappa_shop.runtime.spark import profile_output, session_for_output

    previous_directory = Path.cwd()
    previous_environment = dict(os.environ)
    os.chdir(project_copy)  # Spark resolves the warehouse and metastore against the cwd
    os.environ["DBT_PROFILES_DIR"] = str(project_copy)
    os.environ["SPARK_CONF_DIR"] = str(project_copy / "conf")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.pop("KAPPA_SHOP_SCHEMA", None)
    try:
        # with Spark's Kafka connector too, so that the proof from Kafka runs here, warm
        yield session_for_output(
            profile_output(project_copy, DELTA_TARGET), DELTA_TARGET, connector_jars()
        )
    finally:
        os.chdir(previous_directory)
        os.environ.clear()
        os.environ.update(previous_environment)


@pytest.fixture(scope="session")
def fast_start_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of a fast start (docs/fast-start.md) for the tests of it: the one this run
    uses when it is opted in (`make ... KAPPA_SHOP_FAST_START=1`, whose PYSPARK_SUBMIT_ARGS name
    it), else one built here, in a copy of the project, as `make setup KAPPA_SHOP_FAST_START=1`
    builds it (about a minute)."""
    from kappa_shop.runtime import fast_start

    directory = fast_start.in_use()
    if directory is not None:
        return directory
    directory = tmp_path_factory.mktemp("fast-start")
    root = copy_project(tmp_path_factory.mktemp("fast-start-build") / "kappa_shop")
    result = run_in(
        root,
        [sys.executable, "-m", "kappa_shop.runtime.fast_start_build", str(directory)],
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return directory


@pytest.fixture(scope="session")
def built_project(spark: Any, project_copy: Path) -> BuiltProject:
    """The copy built exactly as `make run` builds it: generated sample log, dbt build, docs."""
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    return BuiltProject(root=project_copy, dbt=project, summary=build(project))


@dataclass
class DeltaProof:
    checked: str  # what `kappa-shop check --target local_delta` printed
    report: Any  # the proof's VerifyReport
    project: DbtProject  # the project copy on the Delta target


@pytest.fixture(scope="session")
def delta_proof(
    spark: Any, project_copy: Path, tmp_path_factory: pytest.TempPathFactory
) -> DeltaProof:
    """`kappa-shop check` on the Delta target, then SMALL_PROOF on it, in the project copy
    (schemas verify_<seed>_raw, _incremental and _full: Delta's catalog hands the parquet
    tables of the rest of the suite to Spark's own). test_delta reads it; test_cluster compares
    the cluster's tables of the same proof with its."""
    import contextlib
    import io

    from kappa_shop.cli import main
    from kappa_shop.proof.verify import verify

    checked = io.StringIO()
    with contextlib.redirect_stdout(checked):
        status = main(["check", "--target", DELTA_TARGET])
    assert status == 0, checked.getvalue()
    project = DbtProject(root=project_copy, target=DELTA_TARGET, profiles_dir=project_copy)
    work_dir = tmp_path_factory.mktemp("delta")
    report = verify(project, SMALL_PROOF, work_dir, progress=lambda _: None)
    return DeltaProof(checked.getvalue(), report, project)


# --- ports and listening sockets (the cluster and Kafka tests) ---


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports on 127.0.0.1, below the range the system
    hands out to outgoing connections: a port free now in that range can be taken by a worker's
    connection to the master before the server binds it (it happened: "Address already in
    use")."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    high = int(ephemeral.read_text().split()[0]) if ephemeral.is_file() else 32_768
    high = max(high, 12_000)  # (a system whose outgoing ports start low: ours from 11000)
    low = 11_000
    start = low + os.getpid() % (high - count - low)
    for base in [*range(start, high - count, 7), *range(low, start, 7)]:
        sockets = []
        try:
            for port in range(base, base + count):
                probe = socket.socket()
                sockets.append(probe)
                probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for probe in sockets:
                probe.close()
    raise RuntimeError("no free ports")


def listening_addresses(pids: list[int]) -> set[str]:
    """The local addresses the processes listen on (from /proc: no tools needed)."""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addresses = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address = fields[1].split(":")[0]
                addresses.add(_decode_address(address))
    return addresses


def _decode_address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)
