"""What the commands share: the options several of them take, and opening the project.

Checks that need no Spark (an option's value, a directory, Java) run first, so that an
ordinary mistake is one line before anything slow starts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kappa_shop.errors import KappaShopError

if TYPE_CHECKING:
    from kappa_shop.ingest.ingestion import KafkaSource
    from kappa_shop.runtime.dbt import DbtProject

# what `register(commands)` of each command module adds its parser to
Subcommands = argparse._SubParsersAction


def parse_batches(text: str) -> list[int]:
    """'3', '1-4', '1,3,5-7' -> batch numbers."""
    numbers: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                first, last = (int(value) for value in part.split("-", 1))
                numbers += range(first, last + 1)
            else:
                numbers.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a batch list: {text!r} (try 3, 1-4 or 1,3)"
        ) from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"batch numbers start at 1: {text!r}")
    return numbers


def add_batches(parser: argparse.ArgumentParser) -> None:
    """--batches or --all: which arrival batches of a generated log."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--batches", type=parse_batches, help="batch numbers, such as 3, 1-4 or 1,3,5-7"
    )
    which.add_argument("--all", action="store_true", help="every arrival batch of the log")


def describe(batches: list[int]) -> str:
    """Batch numbers as a reader wants them: 1-6 for a run of them, else 1,3,5."""
    if len(batches) > 3 and batches == list(range(batches[0], batches[-1] + 1)):
        return f"{batches[0]}-{batches[-1]}"
    return ",".join(str(batch) for batch in batches)


def add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        default=None,
        help="dbt target from profiles.yml: local (embedded Spark, the default), local_delta and "
        "local_iceberg (the same with Delta Lake or Apache Iceberg tables), cluster or "
        "cluster_delta (the Thrift Server of `kappa-shop cluster up`, parquet or Delta tables)",
    )


def add_up_down_status(
    parser: argparse.ArgumentParser, what: str, stopped: str, timeout: float
) -> None:
    """The action (up, down, status) and --timeout of a command that runs a service here."""
    parser.add_argument(
        "action",
        choices=("up", "down", "status"),
        help=f"up: start and wait until it answers; down: stop {stopped}; status: show",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds to wait for {what} to answer (up) or to stop (down)",
    )


def add_kafka_settings(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-servers, --kafka-option and --topic-prefix, for a command's --kafka."""
    parser.add_argument(
        "--bootstrap-servers",
        default=None,
        help="with --kafka: the brokers (default: KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the "
        "broker of `kappa-shop kafka up`)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --kafka: a Kafka client setting passed through (security.protocol=SSL, "
        "sasl.mechanism=..., ssl.truststore.location=...); repeat for more",
    )
    parser.add_argument(
        "--topic-prefix",
        default="",
        help="with --kafka: the topics are <prefix><stream>, such as shop.order_events "
        "(default: no prefix)",
    )


def kafka_source(arguments: argparse.Namespace) -> KafkaSource:
    """The KafkaSource of a command's --kafka settings, after probing its brokers (one line
    when none answers)."""
    from kappa_shop.ingest.ingestion import KafkaSource
    from kappa_shop.runtime.kafka import check_brokers, default_bootstrap_servers

    source = KafkaSource(
        arguments.bootstrap_servers or default_bootstrap_servers(),
        dict(option.split("=", 1) for option in arguments.kafka_option),
        arguments.topic_prefix,
    )
    if not source.options:  # (a broker that needs TLS or SASL does not answer a probe)
        check_brokers(source.bootstrap_servers)
    return source


def log_source(arguments: argparse.Namespace) -> tuple[Any, list[Path]]:
    """The log a command reads, --landing DIR or --kafka (its brokers probed: kafka_source),
    and the jars its Spark needs for it (Spark's Kafka connector, for --kafka)."""
    from kappa_shop.runtime.kafka import connector_jars

    if arguments.kafka:
        return kafka_source(arguments), connector_jars()
    return arguments.landing.resolve(), []


def project_root(arguments: argparse.Namespace) -> Path:
    """The dbt project's root: --project-dir, else the nearest directory upward with
    dbt_project.yml (one line when there is none)."""
    from kappa_shop.runtime.environment import find_project_root

    return find_project_root(arguments.project_dir)


def open_project(arguments: argparse.Namespace, root: Path | None = None) -> DbtProject:
    """The project at `root` (else found from the arguments) on the command's --target, once
    the checks that need no Spark passed: --kafka-option's form, then Java; the process's
    environment set for dbt and Spark (profiles, loopback, Spark's logging). Starts nothing."""
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.environment import check_java, prepare_process_environment

    root = root or project_root(arguments)
    if getattr(arguments, "kafka", False) and not all(
        "=" in option for option in getattr(arguments, "kafka_option", [])
    ):  # (bench --kafka has no client settings: it produces to the project's own broker)
        raise KappaShopError("--kafka-option takes NAME=VALUE, such as security.protocol=SSL")
    check_java()
    prepare_process_environment(root)
    return DbtProject(root=root, target=getattr(arguments, "target", None))


def vars_mapping(text: str) -> dict[str, Any]:
    """--vars as dbt reads it (YAML, of which JSON is a part): a mapping, else one clear error."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KappaShopError(f"--vars is not YAML or JSON: {str(error).splitlines()[0]}") from None
    if not isinstance(value, dict):
        raise KappaShopError(f"--vars takes a mapping, such as '{{name: value}}'; got {text!r}")
    return value
