"""A reprocess killed with SIGKILL (its process group, Spark's JVM included) in the middle of
its build, on parquet (the `local` target), in a project copy of its own, each command a
process of its own: readers' names keep pointing at the served version, its incremental runs
go on and take the batches ingested after the kill, and the killed version is listed as not
finished. (test_reprocess runs the whole scenario on Delta in this process, a switch stopped
half way included: the state a kill there leaves, whose undoing it checks.)"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

import pytest
from conftest import copy_project, kappa_shop_in, kappa_shop_sequence, killed_at

from kappa_shop.log.generator import GeneratorConfig, generate
from kappa_shop.log.landing import batch_numbers, deliver

# Spark starts in the subprocesses (not through a fixture of conftest's SPARK_FIXTURES)
pytestmark = pytest.mark.spark

SERVING = "killed"
LOG = GeneratorConfig(
    seed=29,
    events=800,
    days=2.0,
    batches=6,
    late_fraction=0.08,
    duplicate_fraction=0.03,
    malformed_fraction=0.01,
)
# version 2's build killed a second after it starts this staging model (the first models
# rebuilt, the rest of the DAG not yet)
KILLED_IN_BUILD = f"START sql exact_incremental model {SERVING}__v2.stg_orders__order_events"


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What each command printed, in order."""
    work = tmp_path_factory.mktemp("reprocess_killed")
    root = copy_project(work / "kappa_shop")
    log_dir, landing = work / "log", work / "landing"
    generate(LOG, log_dir, progress=lambda message: None)
    batches = batch_numbers(log_dir)

    def commands(*arguments: list[str]) -> list[str]:
        # one process for the commands between kills: one JVM and its warm-up, not one each
        started = time.monotonic()
        printed = kappa_shop_sequence(root, *arguments, timeout=1200, KAPPA_SHOP_SCHEMA=SERVING)
        # (shown with pytest -s: where the module's minutes go)
        shown = "; ".join(" ".join(command) for command in arguments)
        print(f"kappa-shop {shown}: {time.monotonic() - started:.1f} s")
        return printed

    ingest = ["ingest", "--landing", str(landing)]
    build = ["build", "--log", "ingested", "--no-docs", "--no-tests"]
    seen = {}
    deliver(log_dir, landing, batches[:-2])
    _, seen["first build"] = commands(ingest, build)
    started = time.monotonic()
    seen["killed"], seen["build at once"] = killed_at(
        root, [sys.executable, "-m", "kappa_shop", "reprocess"], KILLED_IN_BUILD, delay=1.0,
        KAPPA_SHOP_SCHEMA=SERVING,
        # a build started while the reprocess runs
        while_running=lambda: kappa_shop_in(
            root, "build", "--log", "ingested", "--no-docs", KAPPA_SHOP_SCHEMA=SERVING
        ),
    )  # fmt: skip
    print(f"reprocess killed in its build: {time.monotonic() - started:.1f} s")
    # the last two arrival batches land after the kill; the served version takes them; then a
    # reprocess run again to its end (not switched): the rows of the version served through
    # the kill, kept up by incremental runs, against a rebuild of every model from the log
    deliver(log_dir, landing, batches[-2:])
    _, seen["next build"], seen["versions"], seen["reprocessed again"] = commands(
        ingest, build, ["versions"], ["reprocess", "--no-switch"]
    )
    return seen


def _rows(summary: str) -> dict[str, int]:
    """Rows per table from a build's summary (`  name  1,234 rows  relation ...`)."""
    found = re.findall(r"^\s+(\w+)\s+([\d,]+) rows\s+(\S+)", summary, re.MULTILINE)
    return {name: int(rows.replace(",", "")) for name, rows, _ in found}


def test_the_kill_landed_inside_the_new_versions_build(killed):
    output = killed["killed"]
    assert f"serves version 1; building version 2 beside it ({SERVING}__v2)" in output
    assert KILLED_IN_BUILD in output
    assert "relations into" not in output and "Switched" not in output


def test_a_build_started_while_the_reprocess_runs_is_refused_in_one_line(killed):
    # on `local` the embedded metastore admits one process: the build waits for none and
    # changes nothing (on `cluster` both run, each on its own version: docs/reprocessing.md)
    refused = killed["build at once"]
    assert refused.returncode == 1
    assert refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(
        "kappa-shop: error: another Spark process (a build, a verify, a dbt command) is using "
        "this project's metastore"
    ), line
    assert line.endswith("nothing was started or changed.")


def test_the_served_version_takes_the_batches_ingested_after_the_kill(killed):
    before, after = _rows(killed["first build"]), _rows(killed["next build"])
    # the raw tables and the models fed by every web event took the two later batches, read
    # through the serving names (views on version 1)
    for name in ("raw_web_events", "raw_ingestion_batches", "stg_web__events", "page_views"):
        assert after[name] > before[name] > 0, name
    assert f"{SERVING}.page_views" in killed["next build"]
    assert "interrupted" not in killed["next build"]


def test_readers_names_point_at_the_served_version_and_the_killed_one_is_listed(killed):
    lines = killed["versions"].strip().splitlines()
    by_version = {int(line.split()[0]): line for line in lines[1:-1]}
    assert sorted(by_version) == [1, 2]
    assert "serving" in by_version[1]
    assert "building" in by_version[2] and "not finished" in by_version[2]
    assert re.fullmatch(
        rf"\d+ views in {SERVING}, {SERVING}_reference point at version 1", lines[-1]
    ), lines[-1]


def test_the_served_version_has_the_rows_of_a_rebuild_from_the_log(killed):
    output = killed["reprocessed again"]
    # (version 2 was killed: the reprocess run again builds version 3 beside version 1)
    assert "Version 3 against version 1 (served)" in output, output[-3000:]
    compared = re.search(r"^  (\d+) of (\d+) differ$", output, re.MULTILINE)
    assert compared, output[-3000:]
    # every serving name compared row for row (row count and a checksum of every column), and
    # none differs
    assert compared[1] == "0" and int(compared[2]) >= 35, output[-3000:]
