"""`kappa-shop kafka up|status|down`: a real Apache Kafka broker (KRaft, one JVM) from Maven
Central's jars, in a copy of the project on ports of its own: it answers Kafka's protocol on
127.0.0.1 only, `up` again changes nothing, `down` leaves no process and no port; a taken port
and jars that cannot be fetched each stop `up` with one line.

(The jars are fetched once into ~/.cache/kappa-shop/, as for a user; the first run here takes
a minute longer.)"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import copy_project, free_ports, listening_addresses, run_in

from kappa_shop.cluster import process_alive
from kappa_shop.kafka import answers

pytestmark = pytest.mark.spark  # (a JVM of its own, as long as a Spark test's)


def _kafka(root: Path, port: int, *arguments: str, **settings: str):
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "kafka", *arguments]
    return run_in(root, command, timeout=300, KAPPA_SHOP_KAFKA_PORT=str(port), **settings)


def _pid(root: Path) -> int | None:
    import json

    state = root / ".kafka" / "kafka.json"
    return json.loads(state.read_text())["pid"] if state.is_file() else None


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[tuple[Path, int]]:
    root = copy_project(tmp_path_factory.mktemp("kafka") / "kappa_shop")
    port = free_ports(2)
    try:
        yield root, port
    finally:
        _kafka(root, port, "down")


def test_up_starts_a_broker_on_loopback_that_answers_and_up_again_changes_nothing(broker):
    root, port = broker
    first = _kafka(root, port, "up")
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"up: 127.0.0.1:{port}" in first.stdout
    pid = _pid(root)
    assert pid and process_alive(pid)
    assert answers(port)  # Kafka's own protocol: an ApiVersions request answered
    # the broker and its controller, on 127.0.0.1 and nowhere else (Java's sockets are IPv6
    # ones, bound to the IPv4-mapped form of the address)
    addresses = {address.removeprefix("::ffff:") for address in listening_addresses([pid])}
    assert addresses == {"127.0.0.1"}
    assert (root / ".kafka" / "data" / "meta.properties").is_file()  # formatted (KRaft)

    again = _kafka(root, port, "up")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already running" in again.stdout and "nothing started" in again.stdout
    assert _pid(root) == pid

    status = _kafka(root, port, "status")
    assert status.returncode == 0 and "running" in status.stdout, status.stdout


def test_a_taken_port_is_refused_in_one_line(tmp_path):
    other = copy_project(tmp_path / "kappa_shop")
    taken = free_ports(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        result = _kafka(other, taken, "up")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {taken} (broker) on 127.0.0.1 is taken by another process" in lines[0]
    assert _pid(other) is None  # nothing started


def test_jars_that_cannot_be_fetched_are_one_line(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")
    result = _kafka(
        root, free_ports(2), "up",
        XDG_CACHE_HOME=str(tmp_path / "empty-cache"),
        KAPPA_SHOP_MAVEN_REPOSITORY="http://127.0.0.1:9/maven2",  # nothing listens there
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kappa-shop: error: cannot fetch Apache Kafka 4.1.1 from "), lines
    assert "KAPPA_SHOP_MAVEN_REPOSITORY" in lines[0]


def test_down_leaves_no_process_and_no_port(broker):
    root, port = broker
    pid = _pid(root)
    assert pid and process_alive(pid)  # (started by the first test)
    result = _kafka(root, port, "down")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not process_alive(pid)
    assert not answers(port)
    for taken in (port, port + 1):
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", taken)) != 0, taken
    status = _kafka(root, port, "status")
    assert status.returncode == 1 and "stopped" in status.stdout
    assert "No Kafka broker was running" in _kafka(root, port, "down").stdout
