"""A Kafka client from this process: Spark's Kafka connector (fetched once), the brokers to
talk to, a probe that a broker answers Kafka's protocol, and Kafka's own admin client (create
and delete topics). What producing, ingesting, the proof and the local broker share.

The brokers default to KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the local broker's port
(KAPPA_SHOP_KAFKA_PORT, default 9092) on 127.0.0.1."""

from __future__ import annotations

import os
import re
import socket
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.jars import MAVEN_REPOSITORY, cache_directory, resolve_with_ivy, spark_home
from kappa_shop.runtime.processes import LOOPBACK

DEFAULT_PORT = 9092


def broker_port() -> int:
    """KAPPA_SHOP_KAFKA_PORT, or 9092; the controller listens on the next port."""
    value = os.environ.get("KAPPA_SHOP_KAFKA_PORT", str(DEFAULT_PORT))
    try:
        port = int(value)
    except ValueError:
        port = 0
    if not 1024 <= port <= 65534:
        raise KappaShopError(f"KAPPA_SHOP_KAFKA_PORT must be a port 1024..65534 (got {value!r})")
    return port


def answers(port: int, host: str = LOOPBACK) -> bool:
    """Whether a Kafka broker answers on `host`:`port`: its reply to an ApiVersions request
    (Kafka's protocol, version 0: what every client sends first) carries no error."""
    client = b"kappa-shop"
    request = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    try:
        with socket.create_connection((host, port), timeout=5) as connection:
            connection.sendall(struct.pack(">i", len(request)) + request)
            reply = b""
            while len(reply) < 10:
                chunk = connection.recv(4096)
                if not chunk:
                    return False
                reply += chunk
    except OSError:
        return False
    _, correlation_id, error_code = struct.unpack(">iih", reply[:10])
    return correlation_id == 1 and error_code == 0


# The connector depends on spark-token-provider-kafka of its own version (Kafka's delegation
# tokens). Some Maven mirrors lack that artifact's 4.0.1 (this project's CI machines' mirror
# does); its 4.0.0 has the same classes the connector calls (the module did not change between
# the two releases), so the connector's dependency on it is replaced by that version.
TOKEN_PROVIDER = "spark-token-provider-kafka-0-10_2.13"


TOKEN_PROVIDER_VERSION = "4.0.0"


def connector_jars(progress: Callable[[str], None] = print) -> list[Path]:
    """Spark's Kafka connector of the installed PySpark (Scala 2.13) and what it needs, resolved
    from Maven Central (KAPPA_SHOP_MAVEN_REPOSITORY) by PySpark's Ivy once, into
    ~/.cache/kappa-shop/spark-kafka-<version>/ (one line when that fails)."""
    from pyspark import __version__

    directory = cache_directory() / f"spark-kafka-{__version__}" / "jars"
    if (directory / ".complete").is_file():
        return _not_in_pyspark(directory)
    module = (
        "<ivy-module version='2.0'><info organisation='kappa-shop' module='spark-kafka'/>"
        "<dependencies>"
        f"<dependency org='org.apache.spark' name='spark-sql-kafka-0-10_2.13' rev='{__version__}'"
        " conf='default->default'>"
        f"<exclude module='{TOKEN_PROVIDER}'/></dependency>"
        f"<dependency org='org.apache.spark' name='{TOKEN_PROVIDER}' rev='{TOKEN_PROVIDER_VERSION}'"
        " conf='default->master'/>"
        "</dependencies></ivy-module>\n"
    )
    progress(f"  fetching Spark's Kafka connector {__version__} from {MAVEN_REPOSITORY} (once)")
    resolve_with_ivy(module, directory, f"Spark's Kafka connector {__version__}")
    return _not_in_pyspark(directory)


def _not_in_pyspark(directory: Path) -> list[Path]:
    """The jars of `directory` whose artifact PySpark does not ship already (Scala's library,
    snappy, ...): one copy of each class on the classpath."""

    def artifact(jar: Path) -> str:
        return re.sub(r"-\d[^-]*(-[a-z]+)?\.jar$", "", jar.name)

    shipped = {artifact(jar) for jar in (spark_home() / "jars").glob("*.jar")}
    return sorted(jar for jar in directory.glob("*.jar") if artifact(jar) not in shipped)


def default_bootstrap_servers() -> str:
    """KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the broker of `kappa-shop kafka up`."""
    return os.environ.get("KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS") or f"{LOOPBACK}:{broker_port()}"


def kafka_spark(app_name: str = "kappa_shop_produce") -> Any:
    """A local SparkSession with the Kafka connector (no metastore: it writes no tables)."""
    from pyspark.sql import SparkSession

    jars = ",".join(str(jar) for jar in connector_jars())
    return (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", jars)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.driver.host", LOOPBACK)
        .getOrCreate()
    )


def kafka_options(bootstrap_servers: str, options: dict[str, str] | None) -> dict[str, str]:
    """Spark's Kafka options: the brokers and the client settings (`kafka.<name>`)."""
    settings = {f"kafka.{name}": value for name, value in (options or {}).items()}
    return {"kafka.bootstrap.servers": bootstrap_servers, **settings}


def check_connector(spark: Any) -> None:
    """Stop in one line when `spark` has no Kafka connector: it must be asked for when the
    process's Spark starts (connector_jars; `kappa-shop ingest --kafka` and `verify --kafka` do)."""
    from py4j.java_gateway import JavaClass

    if not isinstance(spark.sparkContext._jvm.org.apache.kafka.clients.admin.Admin, JavaClass):
        raise KappaShopError(
            "this process's Spark started without Spark's Kafka connector, so it cannot read or "
            "write Kafka: start it with the jars of kappa_shop.log.produce.connector_jars() "
            "(`kappa-shop ingest --kafka` and `kappa-shop verify --kafka` do)"
        )


def check_brokers(bootstrap_servers: str) -> None:
    """Stop in one line, before Spark starts, when no listed broker answers Kafka's protocol
    (a Kafka client would retry for minutes). Only for brokers without TLS or SASL: the probe
    speaks plain Kafka."""
    addresses = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            raise KappaShopError(
                f"bootstrap servers {bootstrap_servers!r}: each must be HOST:PORT, comma-separated"
            )
        addresses.append((host.strip("[]"), int(port)))
    if not any(answers(port, host) for host, port in addresses):
        raise KappaShopError(
            f"no Kafka broker answers at {bootstrap_servers}: start one (`kappa-shop kafka up`) "
            "or name yours with --bootstrap-servers. Nothing was sent"
        )


@contextmanager
def kafka_admin(
    spark: Any, bootstrap_servers: str, options: dict[str, str] | None = None
) -> Iterator[Any]:
    """Kafka's own admin client, from the Kafka connector's jars on `spark`'s classpath;
    `options` are client settings (security.protocol, sasl.*, ...). Closed after the block."""
    jvm = spark.sparkContext._jvm
    settings = jvm.java.util.Properties()
    settings.put("bootstrap.servers", bootstrap_servers)
    for name, value in (options or {}).items():
        settings.put(name, value)
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(settings)
    try:
        yield admin
    finally:
        admin.close()


def answer_of(spark: Any, future: Any, asked: str = "the Kafka brokers") -> Any:
    """The value of a Kafka client's future, waiting at most a minute; one line naming `asked`
    when the client gives up (no broker answering a client with settings, which the protocol
    probe leaves alone; a broker gone since it was probed)."""
    from py4j.protocol import Py4JJavaError

    try:
        return future.get(60, spark.sparkContext._jvm.java.util.concurrent.TimeUnit.SECONDS)
    except Py4JJavaError as error:
        cause = str(error.java_exception.toString()).strip().splitlines()[0]
        raise KappaShopError(f"{asked} did not answer: {cause}") from None


def create_topics(
    spark: Any,
    bootstrap_servers: str,
    partitions: dict[str, int],
    options: dict[str, str] | None = None,
) -> list[str]:
    """Create each topic of `partitions` (name: partition count) that the brokers lack, with
    the brokers' replication factor; stop in one line when one has fewer partitions than the
    log gives records to. The names of the topics created."""
    jvm = spark.sparkContext._jvm
    with kafka_admin(spark, bootstrap_servers, options) as admin:
        present = set(answer_of(spark, admin.listTopics().names()))
        there = [name for name in partitions if name in present]
        if there:
            described = answer_of(spark, admin.describeTopics(there).allTopicNames())
            for name in there:
                count = described.get(name).partitions().size()
                if count < partitions[name]:
                    raise KappaShopError(
                        f"topic {name} at {bootstrap_servers} has {count} partition(s); the log "
                        f"has records for {partitions[name]}: add partitions to it "
                        "(kafka-topics --alter --partitions), or produce to other topics "
                        "(--topic-prefix). Nothing was sent"
                    )
        missing = [name for name in partitions if name not in present]
        if missing:
            new_topics = jvm.java.util.ArrayList()
            for name in missing:
                new_topics.add(
                    jvm.org.apache.kafka.clients.admin.NewTopic(
                        name,
                        jvm.java.util.Optional.of(partitions[name]),
                        jvm.java.util.Optional.empty(),  # the brokers' replication factor
                    )
                )
            answer_of(spark, admin.createTopics(new_topics).all())
    return missing


def delete_topics(
    spark: Any, bootstrap_servers: str, names: list[str], options: dict[str, str] | None = None
) -> None:
    """Delete the named topics (a proof's own, when it is done)."""
    with kafka_admin(spark, bootstrap_servers, options) as admin:
        present = set(answer_of(spark, admin.listTopics().names()))
        gone = [name for name in names if name in present]
        if gone:
            answer_of(spark, admin.deleteTopics(gone).all())
