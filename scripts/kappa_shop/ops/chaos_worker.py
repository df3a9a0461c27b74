"""The chaos campaign's worker (`python -m kappa_shop.ops.chaos_worker`): what a campaign runs
in a process of its own between kills, with the project's normal jobs. `setup` starts the
campaign's schemas from nothing and builds the first batch; `recover` runs the recovery (the
ingestion and build the killed step interrupted, every data test), counts every landed record in
its raw table, and, when asked, compares every served model with a rebuild from the log. It
prints one line of JSON (RESULT_PREFIX) that the campaign reads."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

RESULT_PREFIX = "chaos-worker-result: "
FILES_PER_INGESTION_BATCH = 4
RECORDS_PER_INGESTION_BATCH = 150  # (from Kafka: --max-files-per-batch caps records)


def source_arguments(landing: Path, kafka: Any) -> list[str]:
    """Where a campaign's commands read the log: its landing zone, or its Kafka topics."""
    if kafka is None:
        return ["--landing", str(landing)]
    return [
        "--kafka", "--bootstrap-servers", kafka.bootstrap_servers,
        "--topic-prefix", kafka.topic_prefix,
        *(f"--kafka-option={name}={value}" for name, value in kafka.options.items()),
    ]  # fmt: skip


def ingest_arguments(landing: Path, kafka: Any) -> list[str]:
    """`kappa-shop ingest` of a campaign: from its landing zone, a few files per ingestion
    batch; or from its Kafka topics, a few hundred records per batch."""
    limit = FILES_PER_INGESTION_BATCH if kafka is None else RECORDS_PER_INGESTION_BATCH
    return ["ingest", *source_arguments(landing, kafka), "--max-files-per-batch", str(limit)]


def live_arguments(landing: Path, kafka: Any) -> list[str]:
    """`kappa-shop live` of a campaign: the service for one cycle (ingest what is new, build,
    record the cycle), its data tests left to the recovery."""
    return ["live", *source_arguments(landing, kafka), "--every", "0", "--cycles", "1",
            "--tests-every", "0"]  # fmt: skip


def landed_records(landing: Path, kafka: bool = False) -> Counter:
    """Every record landed, as many times as it landed: (topic, line) of each line of each
    file; from Kafka, where each landed batch was also produced, (topic, partition, offset,
    value) of the record each line was produced as (at its log offset)."""
    from kappa_shop.log.format import TOPICS
    from kappa_shop.log.produce import as_record

    found: Counter = Counter()
    for topic in TOPICS:
        for path in sorted((landing / "topics" / topic.name).rglob("*.jsonl")):
            _, partition, first_offset = path.stem.split("+")
            with path.open(encoding="utf-8", newline="\n") as handle:
                for index, line in enumerate(handle):
                    if not kafka:
                        found[(topic.name, line[:-1])] += 1
                        continue
                    value = as_record(topic.name, int(partition), line[:-1]).value
                    offset = int(first_offset) + index
                    found[(topic.name, int(partition), offset, value.decode("utf-8"))] += 1
    return found


def raw_records(warehouse: Any, raw_schema: str, kafka: bool = False) -> Counter:
    """Every row of the raw tables: (topic, raw_record); from Kafka, (topic, partition,
    offset, value) of the broker's record it holds."""
    from kappa_shop.log.format import TOPICS

    found: Counter = Counter()
    for topic in TOPICS:
        if not kafka:
            rows = warehouse.sql(f"select raw_record from {raw_schema}.{topic.raw_table}")
            found.update((topic.name, row["raw_record"]) for row in rows)
            continue
        rows = warehouse.sql(
            "select cast(get_json_object(raw_record, '$.partition') as int) as partition, "
            "cast(get_json_object(raw_record, '$.offset') as bigint) as offset, "
            "get_json_object(raw_record, '$.value') as value "
            f"from {raw_schema}.{topic.raw_table}"
        )
        found.update((topic.name, row["partition"], row["offset"], row["value"]) for row in rows)
    return found


def compare_counts(landed: Counter, raw: Counter) -> tuple[str, list[str]]:
    """'exactly once', or how many landed records are missing and how many are doubled."""
    lost = landed - raw
    doubled = raw - landed
    if not lost and not doubled:
        return "exactly once", []
    problems = []
    if lost:
        problems.append(f"{sum(lost.values())} landed record(s) missing from the raw tables")
    if doubled:
        problems.append(f"{sum(doubled.values())} record(s) in the raw tables too often")
    return f"{sum(lost.values())} lost, {sum(doubled.values())} doubled", problems


def _ingest(project: Any, landing: Path, kafka: Any) -> None:
    """The campaign's ingestion, as its killed `kappa-shop ingest` runs it (ingest_arguments):
    a few files per ingestion batch from the landing zone, or a few hundred records from the
    topics."""
    from kappa_shop.ingest.ingestion import ingest

    limit = FILES_PER_INGESTION_BATCH if kafka is None else RECORDS_PER_INGESTION_BATCH
    report = ingest(
        project.spark(), landing if kafka is None else kafka, project.raw_schema,
        progress=lambda message: None, max_files_per_batch=limit, warehouse=project.warehouse(),
    )  # fmt: skip
    print(
        f"chaos-worker: ingested {report.records:,} records in {len(report.batches)} batch(es)",
        flush=True,
    )


def _build(project: Any, tests: bool) -> None:
    """The campaign's build, as its killed `kappa-shop build --log ingested --no-docs` runs it
    (its data tests left out with `tests=False`)."""
    from kappa_shop.serving.pipeline import build, format_summary

    summary = build(project, docs=False, log_source="ingested", tests=tests)
    print(f"chaos-worker: {format_summary(summary)}", flush=True)


def _worker(arguments: argparse.Namespace) -> dict[str, Any]:
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.environment import find_project_root, prepare_process_environment

    root = find_project_root(None)
    prepare_process_environment(root)
    project = DbtProject(root=root, target=os.environ.get("KAPPA_SHOP_TARGET"))
    work_dir = arguments.work_dir
    landing = work_dir / "landing"
    kafka = None
    if arguments.kafka:
        from kappa_shop.ingest.ingestion import KafkaSource
        from kappa_shop.runtime.kafka import connector_jars

        kafka = KafkaSource(**json.loads(arguments.kafka))
        project.spark(extra_jars=connector_jars(progress=lambda message: None))
    warehouse = project.warehouse()  # (Spark started first: the times below are the work's)

    def deliver(batch: int) -> None:
        """The batch lands in the landing zone; from Kafka, it is also produced to the topics
        (the landing zone then only records what was produced, for the count)."""
        from kappa_shop.log.landing import deliver as land

        land(work_dir / "log", landing, [batch])
        if kafka is not None:
            from kappa_shop.log.produce import produce

            produce(
                project.spark(), work_dir / "log", [batch], kafka.bootstrap_servers,
                progress=lambda message: None, topic_prefix=kafka.topic_prefix,
                options=kafka.options,
            )  # fmt: skip

    result: dict[str, Any] = {"problems": [], "seconds": {}}
    if arguments.action == "setup":
        _start_clean(project, landing)
        deliver(1)
        started = time.monotonic()
        _ingest(project, landing, kafka)
        result["seconds"]["ingest"] = time.monotonic() - started
        _build(project, tests=False)
        deliver(2)
        if arguments.ingest == "True":
            _ingest(project, landing, kafka)
        result["detail"] = (
            f"arrival batch 1 ingested, version 1 of {project.schema} built from it; batch 2 "
            "landed" + (" and ingested" if arguments.ingest == "True" else "")
        )
        # where the campaign watches for writes in flight (a kill waits for one), unless the
        # models are Delta tables, whose writes leave no staging directory to see
        from kappa_shop.runtime.warehouse import warehouse_dir

        directory = warehouse_dir(warehouse)
        delta = any(directory.glob(f"{project.schema}__v*.db/*/_delta_log"))
        result["warehouse"] = None if delta else str(directory)
        return result

    step = arguments.step
    done = []
    started = time.monotonic()
    if step == "ingest":
        _ingest(project, landing, kafka)
        result["seconds"]["ingest"] = time.monotonic() - started
        done.append("ingest again")
    if step == "live":
        done.append(_live_again(project, landing if kafka is None else kafka))
        result["problems"] += _live_records_problems(project)
    started = time.monotonic()
    _build(project, tests=True)
    result["seconds"]["build"] = time.monotonic() - started
    done.append("build with tests passed")
    from_kafka = kafka is not None
    result["raw"], problems = compare_counts(
        landed_records(landing, from_kafka), raw_records(warehouse, project.raw_schema, from_kafka)
    )
    result["problems"] += problems
    result["compared"] = "-"
    if arguments.compare == "True":
        from kappa_shop.serving.reprocess import Reprocess
        from kappa_shop.serving.versions import drop_old_versions

        started = time.monotonic()
        # (its tests left out: the served version's passed in the recovery, and the
        # comparison finds the two equal)
        report = Reprocess(project).run(switch=False, tests=False)
        result["seconds"]["reprocess"] = time.monotonic() - started
        differ = [change.name for change in report.changes if not change.equal]
        result["compared"] = f"{len(report.changes) - len(differ)} of {len(report.changes)} equal"
        if differ:
            result["problems"].append(
                f"{len(differ)} model(s) differ from a rebuild from the log: {', '.join(differ)}"
            )
        drop_old_versions(project, keep=1, progress=lambda message: None)
    result["recovery"] = ", ".join(done)
    if arguments.next_batch > 0:
        deliver(arguments.next_batch)
        if arguments.ingest == "True":
            started = time.monotonic()
            _ingest(project, landing, kafka)
            result["seconds"]["ingest"] = time.monotonic() - started
    elif kafka is not None and not result["problems"]:
        # the campaign's last run, found sound: its own topics go (the raw tables keep every
        # record with its topic, partition and offset); kept to look into otherwise
        from kappa_shop.runtime.kafka import delete_topics

        delete_topics(project.spark(), kafka.bootstrap_servers, kafka.topic_names(), kafka.options)
    return result


def _live_again(project: Any, source: Any) -> str:
    """The killed service started again, as its next start runs: a cycle that takes what the
    killed one left (its ingestion batch replayed, its build redone under the contract)."""
    from kappa_shop.serving.live import run_live

    said: list[str] = []
    cycles = run_live(project, source, every=0, cycles=1, tests_every=0, say=said.append)
    for line in said:
        print(f"chaos-worker: {line}", flush=True)
    cycle = cycles[-1]
    if cycle.error:
        raise KappaShopError(f"the service started again failed its cycle: {cycle.error}")
    return "the service again: " + (
        f"a cycle took batches {cycle.first_batch_id}..{cycle.last_batch_id}"
        if cycle.batches
        else "nothing left to take"
    )


def _live_records_problems(project: Any) -> list[str]:
    """What the service's records say was doubled or left out (live.check_records)."""
    from kappa_shop.serving.live import check_records

    return [f"the service's records: {problem}" for problem in check_records(project)]


def _start_clean(project: Any, landing: Path) -> None:
    """The campaign's schemas dropped (the served names, every version, the raw tables and the
    ingestion checkpoint), its landing zone emptied."""
    import shutil

    from kappa_shop.ingest.ingestion import checkpoint_dir

    warehouse = project.warehouse()
    shutil.rmtree(landing, ignore_errors=True)
    prefix = project.schema
    schemas = [next(iter(row.values())) for row in warehouse.sql(f"show schemas like '{prefix}*'")]
    for schema in schemas:
        if schema == prefix or schema == f"{prefix}_raw" or schema.startswith(f"{prefix}__v"):
            warehouse.sql(f"drop schema if exists {schema} cascade")
    shutil.rmtree(checkpoint_dir(warehouse, project.raw_schema), ignore_errors=True)


def worker_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kappa_shop.ops.chaos_worker")
    parser.add_argument("action", choices=("setup", "recover"))
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--step", default="")
    parser.add_argument("--compare", default="False")
    parser.add_argument("--next-batch", type=int, default=0)
    parser.add_argument("--ingest", default="False")
    parser.add_argument("--kafka", default="", help="the KafkaSource, as JSON")
    arguments = parser.parse_args(argv)
    try:
        result = _worker(arguments)
    except KappaShopError as error:
        result = {
            "problems": [f"recovery failed: {error}"], "recovery": "FAILED", "raw": "unchecked",
            "compared": "-", "detail": f"setup failed: {error}", "seconds": {},
        }  # fmt: skip
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
