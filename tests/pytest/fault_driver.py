"""One step of the fault tests (test_faults.py), in a process of its own so that the test can
kill it with SIGKILL wherever it pauses.

A step, in order, each part optional:
1. `--recover`: a plain incremental `dbt run`, which must repair whatever a killed step left;
2. `--batches 3,4`: land those arrival batches of the log and ingest them;
3. `--fault MODEL:POINT`: an incremental `dbt run` with that fault point armed
   (KAPPA_FAULT_POINT, see the kappa package's recovery/_fault_point.sql); it pauses there
   and the test kills it. `--fault none` runs without a fault (the test kills it on a timer
   instead); `--full-refresh` makes that run a full refresh;
4. `--final REPORT`: an incremental `dbt run`, then `dbt build --full-refresh` of the same
   raw tables into `<schema>_full` (their every data test) and a diff of every model,
   written to REPORT as JSON.

Every dbt command builds the models of selector one_model_per_mode (a model of each mode with
its parents): what a kill does to a table is the mode's and the write's business, not a
model's logic (proven on every model by the proof).

Run from the project copy, with DBT_PROFILES_DIR, SPARK_CONF_DIR and KAPPA_SHOP_SCHEMA set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from kappa_shop.ingest.ingestion import ingest
from kappa_shop.log.landing import deliver
from kappa_shop.proof.diff import diff_models
from kappa_shop.runtime.dbt import DbtProject

STARTED = time.monotonic()


def _say(message: str) -> None:
    print(f"fault-driver: [{time.monotonic() - STARTED:.1f} s] {message}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--landing", type=Path, required=True)
    parser.add_argument("--recover", action="store_true")
    parser.add_argument("--batches", default="")
    parser.add_argument("--fault", default="")
    parser.add_argument("--full-refresh", action="store_true")
    parser.add_argument("--final", type=Path, default=None)
    arguments = parser.parse_args()

    project = DbtProject(root=Path.cwd())
    schema = project.schema
    selected = ("--selector", "one_model_per_mode")  # (raw tables: <schema>_raw)
    if arguments.recover:
        project.invoke("run", *selected, "--quiet")
        _say("recovery run done")
    if arguments.batches:
        batches = [int(number) for number in arguments.batches.split(",")]
        deliver(arguments.log, arguments.landing, batches)
        report = ingest(
            project.spark(), arguments.landing, project.raw_schema, warehouse=project.warehouse()
        )
        _say(f"ingested batches {[batch.ingestion_batch_id for batch in report.batches]}")
    if arguments.fault:
        if arguments.fault != "none":
            os.environ["KAPPA_FAULT_POINT"] = arguments.fault
        _say(f"dbt run with fault {arguments.fault}")
        project.invoke("run", *selected, *(["--full-refresh"] if arguments.full_refresh else []))
        os.environ.pop("KAPPA_FAULT_POINT", None)
        _say("the run finished: the fault point was never reached")
    if arguments.final is not None:
        # the incremental run that recovers from the last kill, then the full refresh of the
        # same raw tables with every data test of its models: when the diff finds
        # the two schemas equal, the tests' verdict is the incremental tables' too (a data test
        # reads models, seeds and the raw tables only: test_verify checks that)
        incremental = project.invoke("run", *selected, "--quiet")
        models = sorted(
            item.node.name for item in incremental.results if item.node.resource_type == "model"
        )
        _say("incremental run done")
        beside = project.elsewhere(f"{schema}_full", project.raw_schema)
        build = ("build", *selected, "--quiet", "--exclude-resource-type", "unit_test")
        full = beside.invoke(*build, "--full-refresh", tolerate_failures=True)
        failed = [
            f"{item.node.name}: {item.status}"
            for item in full.results
            if str(item.status) in ("fail", "error")
        ]
        grains = {
            item.node.name: list((item.node.config.meta or {}).get("grain", []))
            for item in full.results
            if item.node.resource_type == "model"
        }
        _say(f"full refresh and its data tests done ({len(failed)} failed tests)")
        warehouse = project.warehouse()
        diffs = [
            diff.__dict__
            for diff in diff_models(
                warehouse, {model: grains[model] for model in models}, schema, f"{schema}_full"
            )
        ]
        arguments.final.write_text(json.dumps({"failed_tests": failed, "diffs": diffs}))
        _say(f"final report written to {arguments.final}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
