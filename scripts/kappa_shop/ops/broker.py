"""A single-node Apache Kafka broker on this machine, for the log to live in a real broker.

    kappa-shop kafka up       fetch the broker's jars once, start it, wait until it answers
    kappa-shop kafka status   whether it runs, its pid, address and log
    kappa-shop kafka down     stop it by process id

One JVM in KRaft mode, broker and controller combined (no ZooKeeper), from Apache Kafka's own
jars on Maven Central (KAFKA_VERSION, pinned): resolved with their dependencies by the Ivy
that the PySpark wheel ships, once, into a cache outside the repository
(`~/.cache/kappa-shop/kafka-<version>/`, or under XDG_CACHE_HOME). Both listeners bind to
127.0.0.1 only. State lives in `.kafka/` in the project (git-ignored): `kafka.json` (pid and
ports), `server.properties`, the broker's data (`data/`, formatted on the first `up`) and its
log (`logs/broker.log`). `up` again changes nothing; `down` leaves no process and no port.

The broker port is KAPPA_SHOP_KAFKA_PORT (default 9092), the controller's the next one.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.jars import MAVEN_REPOSITORY, cache_directory, resolve_with_ivy
from kappa_shop.runtime.kafka import answers, broker_port
from kappa_shop.runtime.processes import (
    LOOPBACK,
    listening,
    log_tail,
    port_taken,
    process_alive,
    stop_process,
)

KAFKA_VERSION = "4.1.1"  # Apache Kafka (Scala 2.13), KRaft; runs on Java 17
BROKER_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
STATE_FILE = "kafka.json"
BROKER_HEAP = "-Xmx512m"  # a test broker: small topics, one process


@dataclass
class Broker:
    """What `up` started: enough to find it again and to stop it."""

    pid: int | None
    port: int  # the broker's (PLAINTEXT) listener
    controller_port: int
    version: str

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"


# --- the jars ----------------------------------------------------------------------------------


def jar_directory(version: str = KAFKA_VERSION) -> Path:
    """Where the broker's jars are cached (they may not be yet)."""
    return cache_directory() / f"kafka-{version}" / "jars"


def fetch_jars(version: str = KAFKA_VERSION, progress: Callable[[str], None] = print) -> Path:
    """The directory of Kafka's broker jars and their dependencies, resolved from Maven Central
    (KAPPA_SHOP_MAVEN_REPOSITORY) by PySpark's Ivy on first use; one line when that fails."""
    directory = jar_directory(version)
    if (directory / ".complete").is_file():
        return directory
    progress(f"  fetching Apache Kafka {version}'s jars from {MAVEN_REPOSITORY} (once, ~45 MB)")
    module = (
        "<ivy-module version='2.0'><info organisation='kappa-shop' module='kafka-broker'/>"
        "<dependencies>"
        f"<dependency org='org.apache.kafka' name='kafka_2.13' rev='{version}'"
        " conf='default->default'/>"
        "</dependencies></ivy-module>\n"
    )
    resolve_with_ivy(module, directory, f"Apache Kafka {version}")
    return directory


# --- state ---------------------------------------------------------------------------------------


def _read_state(home: Path) -> Broker | None:
    try:
        return Broker(**json.loads((home / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_state(home: Path, broker: Broker) -> None:
    path = home / STATE_FILE
    hidden = path.with_name(f".{STATE_FILE}.partial")
    hidden.write_text(json.dumps(asdict(broker), indent=2) + "\n")
    os.replace(hidden, path)


def running(home: Path) -> Broker | None:
    """The broker started from `home` (`kappa-shop kafka up`), when it runs."""
    broker = _read_state(home)
    return broker if _runs(broker) else None


def _runs(broker: Broker | None) -> bool:
    """Whether the broker `broker` names still runs (not another process with its old pid)."""
    if broker is None or not broker.pid or not process_alive(broker.pid):
        return False
    try:
        command_line = Path(f"/proc/{broker.pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return BROKER_CLASS in command_line.split("\0")


def _server_properties(home: Path, port: int, controller_port: int) -> Path:
    path = home / "server.properties"
    path.write_text(
        "\n".join(
            (
                "# written by `kappa-shop kafka up`: one node, broker and controller (KRaft)",
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.bootstrap.servers={LOOPBACK}:{controller_port}",
                f"listeners=PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
                f"advertised.listeners=PLAINTEXT://{LOOPBACK}:{port}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                f"log.dirs={home / 'data'}",
                "num.partitions=4",
                # one node: every internal topic has one replica
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                # the log is the source of truth: keep it (a broker's default is 7 days)
                "log.retention.hours=-1",
                "",
            )
        )
    )
    return path


def _log4j_properties(home: Path) -> Path:
    path = home / "log4j2.properties"
    path.write_text(
        "\n".join(
            (
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = file",
                "appender.file.type = File",
                "appender.file.name = file",
                f"appender.file.fileName = {home / 'logs' / 'broker.log'}",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = %d{ISO8601} %-5p [%c{1}] %m%n",
                "",
            )
        )
    )
    return path


def _java(jars: Path, home: Path, main_class: str, *arguments: str) -> list[str]:
    return [
        "java", BROKER_HEAP, f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
        "-cp", f"{jars}/*", main_class, *arguments,
    ]  # fmt: skip


# --- the commands ------------------------------------------------------------------------------


def up(home: Path, timeout: float = 90.0, progress: Callable[[str], None] = print) -> Broker:
    """Start the broker unless it runs; wait until its port answers."""
    port = broker_port()
    previous = _read_state(home)
    if _runs(previous):
        assert previous is not None
        if previous.port != port:
            raise KappaShopError(
                f"the broker of {home} runs on port {previous.port}, not {port}: "
                "`kappa-shop kafka down` first, then up with the new port"
            )
        progress(
            f"The Kafka broker is already running (pid {previous.pid}, "
            f"{previous.bootstrap_servers}); nothing started."
        )
        return previous
    for label, taken in (("broker", port), ("controller", port + 1)):
        if port_taken(taken):
            raise KappaShopError(
                f"cannot start the Kafka broker: port {taken} ({label}) on {LOOPBACK} is taken "
                "by another process. Free it, or set KAPPA_SHOP_KAFKA_PORT to another port"
            )
    jars = fetch_jars(KAFKA_VERSION, progress)
    for directory in (home / "logs", home / "data"):
        directory.mkdir(parents=True, exist_ok=True)
    properties = _server_properties(home, port, port + 1)
    _log4j_properties(home)
    log = home / "logs" / "broker.log"
    if not (home / "data" / "meta.properties").is_file():
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        formatted = subprocess.run(
            _java(jars, home, STORAGE_TOOL_CLASS, "format", "-t", cluster_id,
                  "-c", str(properties), "--standalone"),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if formatted.returncode != 0:
            raise KappaShopError(
                f"cannot format the Kafka broker's data in {home / 'data'}: "
                + (formatted.stdout + formatted.stderr).strip().splitlines()[-1]
            )
    with (home / "logs" / "broker.out").open("ab") as output:
        process = subprocess.Popen(
            _java(jars, home, BROKER_CLASS, str(properties)),
            cwd=home,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not killed with the shell that started it
        )
    broker = Broker(process.pid, port, port + 1, KAFKA_VERSION)
    _write_state(home, broker)
    deadline = time.monotonic() + timeout
    while not answers(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process.pid, 10.0)
            _write_state(home, Broker(None, port, port + 1, KAFKA_VERSION))
            why = "exited" if process.returncode is not None else f"did not answer in {timeout:g} s"
            last = [line for line in log_tail(log, 40).splitlines() if line.strip()]
            raise KappaShopError(
                f"the Kafka broker {why}: see {log}"
                + (f" (its last line: {last[-1].strip()})" if last else "")
            )
        time.sleep(0.2)
    progress(
        f"Kafka {KAFKA_VERSION} up: {broker.bootstrap_servers} (pid {process.pid}; "
        f"data and logs in {home})"
    )
    return broker


def status(home: Path, progress: Callable[[str], None] = print) -> bool:
    """Print whether the broker runs; True when it runs and answers."""
    broker = _read_state(home)
    if broker is None:
        progress(f"No Kafka broker has been started from {home} (`kappa-shop kafka up`).")
        return False
    running = _runs(broker)
    answering = running and answers(broker.port)
    state = "running" if answering else ("not answering" if running else "stopped")
    progress(
        f"  kafka {broker.version}: {state}, pid {broker.pid if running else '-'}, "
        f"{broker.bootstrap_servers}; log {home / 'logs' / 'broker.log'}"
    )
    return answering


def down(home: Path, timeout: float = 60.0, progress: Callable[[str], None] = print) -> bool:
    """Stop the broker (SIGTERM, then SIGKILL after `timeout`) and wait until its ports are
    free; True when something was stopped."""
    broker = _read_state(home)
    if not _runs(broker):
        progress("No Kafka broker was running.")
        return False
    assert broker is not None and broker.pid is not None
    stop_process(broker.pid, timeout)
    deadline = time.monotonic() + timeout
    while listening(broker.port) or listening(broker.controller_port):
        if time.monotonic() > deadline:
            raise KappaShopError(
                f"the Kafka broker stopped, but port {broker.port} is still taken after "
                f"{timeout:g} s"
            )
        time.sleep(0.2)
    _write_state(home, Broker(None, broker.port, broker.controller_port, broker.version))
    progress(f"The Kafka broker is down (pid {broker.pid}).")
    return True
