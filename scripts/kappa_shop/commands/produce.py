"""`kappa-shop produce`: produce arrival batches of a generated log to Kafka topics."""

from __future__ import annotations

import argparse
from pathlib import Path

from kappa_shop.commands.common import Subcommands, add_batches, describe, project_root


def register(commands: Subcommands) -> None:
    produce = commands.add_parser(
        "produce",
        help="produce arrival batches of a generated log to Kafka topics (deliver's twin)",
        description=(
            "Send the records of the chosen arrival batches of a generated log to Kafka, one "
            "topic per stream, each record in its partition and offset order, keyed by its key, "
            "its value the event as a producer writes it (the broker adds topic, partition and "
            "offset); every imperfection of the log kept. Through Spark's Kafka sink. Safe to "
            "repeat: what a partition already holds is not sent again."
        ),
    )
    produce.add_argument("--log", type=Path, required=True, help="a directory made by `generate`")
    produce.add_argument(
        "--bootstrap-servers",
        default=None,
        help="the Kafka brokers (default: KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the broker of "
        "`kappa-shop kafka up`, 127.0.0.1:KAPPA_SHOP_KAFKA_PORT)",
    )
    add_batches(produce)
    produce.add_argument(
        "--topic-prefix",
        default="",
        help="the topics are <prefix><stream>, such as shop.order_events (default: no prefix)",
    )
    produce.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.landing import batch_numbers
    from kappa_shop.log.produce import produce
    from kappa_shop.runtime.environment import check_java
    from kappa_shop.runtime.kafka import check_brokers, default_bootstrap_servers, kafka_spark

    project_root(arguments)
    check_java()
    batches = batch_numbers(arguments.log) if arguments.all else arguments.batches
    servers = arguments.bootstrap_servers or default_bootstrap_servers()
    check_brokers(servers)
    produced = produce(
        kafka_spark(), arguments.log, batches, servers, topic_prefix=arguments.topic_prefix
    )
    print(
        f"Produced batch(es) {describe(produced.batches)}: {produced.records:,} records to "
        f"{servers} ("
        + ", ".join(
            f"{topic} {count:,}" for topic, count in sorted(produced.records_by_topic.items())
        )
        + f"); {produced.partitions_already_there} partition file(s) were already there."
    )
    return 0
