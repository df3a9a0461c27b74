"""The live benchmark's worker (`python -m kappa_shop.bench.live_worker`): what `kappa-shop bench
--live` runs with Spark while the service does not (the embedded metastore admits one process
at a time). `setup` drops the benchmark's schemas and ingestion checkpoint; `report`, once the
service has stopped, reads the service's records of the cycles after the history's (cycles,
their latency histograms), checks them (live.check_records), counts every delivered record in
its raw table, and compares every model with a full refresh of the same raw tables. It prints
one line of JSON (RESULT_PREFIX) that the benchmark reads."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

RESULT_PREFIX = "bench-live-worker-result: "


def _project() -> Any:
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.environment import find_project_root, prepare_process_environment

    root = find_project_root(None)
    prepare_process_environment(root)
    return DbtProject(root=root, target=os.environ.get("KAPPA_SHOP_TARGET"))


def _setup(project: Any) -> dict[str, Any]:
    """From nothing: the schema's, its versions', raw and comparison schemas, and ingestion's
    checkpoint of the raw schema."""
    from kappa_shop.ingest.ingestion import checkpoint_dir

    warehouse = project.warehouse()
    for row in warehouse.sql(f"show schemas like '{project.schema}*'"):
        warehouse.sql(f"drop schema {row['namespace']} cascade")
    shutil.rmtree(checkpoint_dir(warehouse, project.raw_schema), ignore_errors=True)
    return {"problems": []}


def _report(project: Any, history_cycle: int, landing: Path, kafka: bool) -> dict[str, Any]:
    from kappa_shop.bench.checks import check_models, model_grains
    from kappa_shop.ops.chaos_worker import compare_counts, landed_records, raw_records
    from kappa_shop.serving import live
    from kappa_shop.serving.versions import open_serving, version_schema

    warehouse = project.warehouse()
    raw = project.raw_schema
    cycles = [
        cycle for cycle in live.recorded_cycles(warehouse, raw) if cycle.number > history_cycle
    ]
    rows = warehouse.sql(
        f"select latency_ticks, sum(records) as records from {raw}.{live.LATENCY_TABLE}"
        f" where cycle > {history_cycle} group by latency_ticks"
    )
    histogram = {int(row["latency_ticks"]): int(row["records"]) for row in rows}
    result: dict[str, Any] = {
        "cycles": [
            {
                "number": cycle.number,
                "started": cycle.started_at.isoformat(),
                "seconds": (cycle.ended_at - cycle.started_at).total_seconds(),
                "batches": cycle.batches,
                "records": cycle.records,
                "ingest_seconds": cycle.ingest_seconds,
                "build_seconds": cycle.build_seconds,
                "model_seconds": cycle.model_seconds,
                "latency": cycle.latency,
                "error": cycle.error,
            }
            for cycle in cycles
        ],
        "histogram": {str(tick): count for tick, count in histogram.items()},
        "records_problems": live.check_records(project),
    }
    held = raw_records(warehouse, raw, kafka)
    if kafka:
        result["raw"], result["problems"] = _produced_once(landing, held)
    else:
        result["raw"], result["problems"] = compare_counts(landed_records(landing), held)
    # every model the service kept, against a full refresh of the same raw tables
    full = project.elsewhere(f"{project.schema}_full", raw)
    grains = model_grains(full.invoke("run", "--full-refresh", "--quiet"))
    served = open_serving(warehouse, project.schema).served
    result["check"] = check_models(
        warehouse, grains, version_schema(project.schema, served or 1), f"{project.schema}_full"
    )
    return result


def _produced_once(landing: Path, held: Counter) -> tuple[str, list[str]]:
    """From Kafka, where the benchmark produced each batch at its partitions' next offsets (and
    landed it, as the record of what it produced): each produced record in its raw table as
    many times as it was produced, by topic, partition and value (the landed files' offsets are
    not the broker's), and no (topic, partition, offset) of the broker's twice."""
    from kappa_shop.ops.chaos_worker import compare_counts, landed_records

    produced: Counter = Counter()
    for (topic, partition, _, value), count in landed_records(landing, kafka=True).items():
        produced[(topic, partition, value)] += count
    values: Counter = Counter()
    offsets: Counter = Counter()
    for (topic, partition, offset, value), count in held.items():
        values[(topic, partition, value)] += count
        offsets[(topic, partition, offset)] += count
    said, problems = compare_counts(produced, values)
    twice = sum(count - 1 for count in offsets.values() if count > 1)
    if twice:
        problems.append(f"{twice} record(s) of the broker's in the raw tables more than once")
        said = f"{twice} offset(s) twice" + ("" if said == "exactly once" else f", {said}")
    return said, problems


def worker_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kappa_shop.bench.live_worker")
    parser.add_argument("action", choices=("setup", "report"))
    parser.add_argument("--history-cycle", type=int, default=0)
    parser.add_argument("--landing", type=Path)
    parser.add_argument("--kafka", action="store_true", help="the log was produced to Kafka")
    arguments = parser.parse_args(argv)
    try:
        project = _project()
        if arguments.action == "setup":
            result = _setup(project)
        else:
            result = _report(project, arguments.history_cycle, arguments.landing, arguments.kafka)
    except KappaShopError as error:
        result = {"problems": [f"{arguments.action} failed: {error}"], "failed": True}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
