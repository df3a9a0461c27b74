"""`kappa-shop kafka`: start, stop or show a single-node Apache Kafka broker on 127.0.0.1."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_up_down_status, project_root


def register(commands: Subcommands) -> None:
    kafka = commands.add_parser(
        "kafka",
        help="start, stop or show a single-node Apache Kafka broker on 127.0.0.1",
        description=(
            "Apache Kafka in KRaft mode (broker and controller in one JVM) from its jars on "
            "Maven Central, fetched once into ~/.cache/kappa-shop/; bound to 127.0.0.1 on "
            "KAPPA_SHOP_KAFKA_PORT (default 9092) and the next port (its controller); data, "
            "state and log in .kafka/. `up` and `down` are safe to repeat."
        ),
    )
    add_up_down_status(kafka, "the broker", "it", 90.0)
    kafka.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ops import broker
    from kappa_shop.runtime.environment import check_java

    home = project_root(arguments) / ".kafka"
    check_java()
    if arguments.action == "status":
        return 0 if broker.status(home) else 1
    if arguments.action == "down":
        broker.down(home, timeout=min(arguments.timeout, 60.0))
        return 0
    broker.up(home, timeout=arguments.timeout)
    return 0
