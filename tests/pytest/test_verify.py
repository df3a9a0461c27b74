"""The proof (`kappa-shop verify`) on a real Spark session: incremental builds over a random
arrival schedule equal a full refresh for every model (one seed here, over eight days, with
the ledger compacted; test_delta proves another seed on Delta, test_cluster one on the
cluster); and the proof fails when the incremental contract is broken on purpose."""

from __future__ import annotations

import itertools
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import REPO_ROOT, copy_project, ledger_rows

from kappa_shop.cli import main
from kappa_shop.proof.schedule import OLD_DAY, REACH_EDGES, REDELIVERY, plan_schedule
from kappa_shop.proof.verify import VerifyConfig, contract_mode, format_report, verify
from kappa_shop.runtime.contract import LEDGER_TABLE
from kappa_shop.runtime.dbt import DbtProject


def test_incremental_builds_equal_a_full_refresh(spark, project_copy, tmp_path):
    """The proof, with the batch ledger compacted every run past the second
    (kappa_ledger_compact_after: 2; every other proof of the suite runs with the default, 20,
    which a proof's few runs never reach): incremental equals a full refresh, idempotence, the
    replayed last runs; each model's ledger stays one unbroken range of at most two rows plus
    what its downstream models still need; and rows that a compaction killed between its two
    statements left inside a compacted range neither break the next run nor stay."""
    seed = 4
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    # eight days: late events land days behind the newest, which a running total
    # (inventory_levels) must carry through every later day (over two days, a round's new
    # events cover every day a late one touches; this log and schedule failed the proof when
    # inventory_levels recomputed only the touched days)
    # (data tests in the full refresh, whose verdict the diff carries over to the incremental
    # tables: `make verify` runs them in every build)
    config = VerifyConfig(
        seed=seed,
        events=1500,
        rounds=4,
        days=8.0,
        dbt_vars={"kappa_ledger_compact_after": 2},
        data_tests="full-refresh",
    )

    report = verify(project, config, tmp_path / "proof", progress=lambda message: None)

    print(format_report(report))
    assert report.passed, format_report(report)
    kinds = [entry.kind for entry in report.schedule]
    assert kinds.count(REDELIVERY) == 1 and kinds[-3:] == [REACH_EDGES, REACH_EDGES, OLD_DAY]
    # the second arrival round rebuilt one upstream model of each mode alone first
    rebuilt = [entry.rebuilt for entry in report.schedule if entry.rebuilt]
    assert len(rebuilt) == 1 and len(rebuilt[0]) == 3, report.schedule
    manifest = project.invoke("parse", "--quiet")
    modes = {node.name: contract_mode(node) for node in manifest.nodes.values()}
    assert sorted(modes[name] for name in rebuilt[0]) == ["batches", "days", "keys"]
    # ten builds: each round's (4, the 2 reach-edge rounds, the old day's), the second build
    # of one round, the replay and the full refresh; every data test in the last
    labels = [label for label, _ in report.data_tests_run]
    assert labels[-2:] == ["replay of the last runs", "full refresh"], labels
    counts = [count for _, count in report.data_tests_run]
    assert len(counts) == 10, report.data_tests_run
    data_tests = sum(1 for node in manifest.nodes.values() if node.resource_type == "test")
    assert counts[:9] == [0] * 9 and counts[9] == data_tests > 0, report.data_tests_run
    by_model = {diff.model: diff for diff in report.diffs}
    # every model of the project diffed (the bench's baselines are not built by a plain build),
    # and each wrote something in an incremental build (report.idle, part of passed)
    models = {
        path.stem for path in (project_copy / "models").rglob("*.sql") if "bench" not in path.parts
    }
    assert set(by_model) == models and not report.undiffed and not report.idle
    for model in ("stg_web__events", "stg_log__quarantined_records", "ingestion_lateness"):
        assert by_model[model].full_rows > 0, model
    schema = f"verify_{seed}_incremental"
    # the log really was delivered out of order and duplicated
    quarantined = spark.sql(
        f"select quarantine_reason, count(*) as n from {schema}.stg_log__quarantined_records "
        "group by quarantine_reason"
    ).collect()
    assert {row["quarantine_reason"] for row in quarantined} >= {
        "not_json",
        "conflicting_duplicate",
    }
    outcomes = spark.sql(
        f"select outcome, sum(deliveries) as n from {schema}.stg_log__delivery_outcomes "
        "group by outcome"
    ).collect()
    assert {row["outcome"]: row["n"] for row in outcomes}["duplicate"] > 0
    # the recomputing models really ran incrementally: their latest run (the replayed one,
    # which the compactions keep) recomputed a set of days (or key buckets) rather than
    # rebuilding (models of the busy streams: a small log's later batches may hold no
    # profile change)
    recomputing = ("sessions", "shop_metrics_per_minute", "user_activity_rolling_hour")
    recomputing += ("int_search_clicks_matched", "orders_current", "inventory_levels")
    for model in recomputing:
        assert by_model[model].full_rows > 0, model
    latest = spark.sql(
        f"select model_name, max_by(struct(refresh_mode, size(recomputed_partitions) as days),"
        f" first_batch_id) as run from {schema}.{LEDGER_TABLE} "
        f"where model_name in ({', '.join(repr(model) for model in recomputing)}) "
        "group by model_name"
    ).collect()
    modes = {row["model_name"]: (row["run"]["refresh_mode"], row["run"]["days"]) for row in latest}
    assert modes.keys() == set(recomputing), modes
    for model, (mode, days) in modes.items():
        # (days: the partitions it recorded; 0 when the last round, a reach-edge batch of
        # other streams, touched none of its days; a rebuild records null, size -1)
        assert mode == "incremental" and days >= 0, (model, mode, days)

    # the compacted ledger
    runs: dict[str, list[tuple]] = {}
    for model, first, last, mode, _ in ledger_rows(spark, schema):
        runs.setdefault(model, []).append((first, last, mode))
    for model, rows in runs.items():
        # one unbroken range from batch 1, nothing left inside a compacted row
        assert rows[0][0] == 1, (model, rows)
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(rows)), (model, rows)
    # models that nothing downstream reads keep the compacted row and their latest run
    for model in ("sessions", "orders_daily", "search_ctr_daily", "users_current"):
        assert runs[model][0][2] == "compacted", (model, runs[model])
        assert len(runs[model]) == 2, (model, runs[model])

    # a compaction killed after writing its compacted rows and before dropping the rows they
    # cover: one of those rows back inside orders_daily's compacted range
    compacted_through = runs["orders_daily"][0][1]
    assert compacted_through >= 2
    spark.sql(
        f"insert into {schema}.{LEDGER_TABLE} "
        f"partition (model_name = 'orders_daily', first_batch_id = {compacted_through}) "
        f"select cast({compacted_through} as bigint), 'incremental', current_timestamp(), "
        "array('2024-01-01'), cast(null as string)"
    )
    proof_tables = project.elsewhere(schema, f"verify_{seed}_raw")
    proof_tables.invoke(
        "run", "--select", "orders_daily", dbt_vars={"kappa_ledger_compact_after": 1}
    )
    after = [
        (first, last, mode)
        for _, first, last, mode, _ in ledger_rows(spark, schema, "orders_daily")
    ]
    assert after == runs["orders_daily"]


def test_ledger_compaction_limits_are_spread_over_the_models(spark, project_copy):
    """Every model gains a ledger row a run, all from the same full refresh: with one limit
    they would all be compacted in the same run. ledger_compact_limit gives each model its own,
    between half the var plus one and the var; with the var at 2 (the main proof), all get 2."""
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    models = sorted(
        path.stem for path in (project_copy / "models").rglob("*.sql") if "bench" not in path.parts
    )
    inline = (
        "{% for name in "
        + json.dumps(models)
        + " %}{{ kappa._ledger_compact_limit(name) }} {% endfor %}"
    )

    def limits(compact_after: int) -> list[int]:
        result = project.invoke(
            "compile", "--inline", inline, "--quiet",
            dbt_vars={"kappa_ledger_compact_after": compact_after},
        )  # fmt: skip
        return [int(value) for value in result.results[0].node.compiled_code.split()]

    spread = limits(20)
    assert len(spread) == len(models) >= 35
    assert min(spread) >= 11 and max(spread) <= 20, spread
    # spread out: no limit is shared by more than a quarter of the models
    assert len(set(spread)) >= 6, spread
    assert max(spread.count(limit) for limit in spread) <= len(models) // 4, spread
    assert set(limits(2)) == {2}
    assert set(limits(1)) == {1}


# What would let a data test judge the incremental schema differently from a full refresh the
# diff found equal: reading the run's own state (the ledger, the run lock, the table being
# tested as `this`), compiling differently in a full refresh, or naming a table by hand
# instead of through ref() or source()
RUN_DEPENDENT = re.compile(
    r"kappa_batch_ledger|kappa_consumed_batches|kappa_run_lock|is_incremental|full_refresh|FULL_REFRESH"
    r"|\{\{\s*this\b|target\.schema|run_started_at|invocation_id"
    r"|\b(from|join)\s+[\w{}]+\.\w+",
    re.IGNORECASE,
)


def test_data_tests_read_only_what_a_full_refresh_and_the_diff_cover():
    # `--data-tests full-refresh` (every proof of make test) rests on this: a data test reads
    # only models, seeds and sources through ref() and source(), the same in both builds, so
    # its verdict on the full refresh holds for incremental tables the diff found equal
    files = [
        *(REPO_ROOT / "tests" / "dbt").glob("*.sql"),
        *(REPO_ROOT / "macros" / "tests").glob("*.sql"),
    ]
    assert len(files) >= 10
    found = {
        f"{path.name}:{number}": line.strip()
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if RUN_DEPENDENT.search(line)
    }
    assert found == {}, found
    # (and the pattern does catch such a test)
    assert RUN_DEPENDENT.search("select * from {{ target.schema }}.kappa_batch_ledger")
    assert RUN_DEPENDENT.search("{% if is_incremental() %}")
    assert not RUN_DEPENDENT.search("from {{ ref('sessions') }} as s join stg on s.id = stg.id")


def test_schedules_shuffle_and_redeliver():
    schedule = plan_schedule(list(range(1, 12)), rounds=5, seed=7)
    arrivals = [
        number for entry in schedule if entry.kind != REDELIVERY for number in entry.batches
    ]

    assert sorted(arrivals) == list(range(1, 12))  # every batch delivered exactly once
    assert arrivals != sorted(arrivals)  # and not in order
    assert [entry.kind for entry in schedule].count(REDELIVERY) == 1
    redelivered = next(entry for entry in schedule if entry.kind == REDELIVERY).batches[0]
    before = schedule[: schedule.index(next(e for e in schedule if e.kind == REDELIVERY))]
    assert redelivered in {number for entry in before for number in entry.batches}


def test_in_every_schedule_a_batch_overtakes_an_older_one():
    # the smallest proofs have two arrival rounds: a batch of the first is always newer than
    # one of the second, whatever the seed's jitter did
    for seed in range(1, 60):
        schedule = plan_schedule(list(range(1, 7)), rounds=3, seed=seed)
        first, second = (entry.batches for entry in schedule if entry.kind != REDELIVERY)
        assert max(first) > min(second), (seed, schedule)
        assert sorted(first + second) == list(range(1, 7))


def test_the_old_day_batch_holds_a_few_events_of_one_old_day_moved_out_of_their_batches(
    tmp_path,
):
    from kappa_shop.log.generator import GeneratorConfig, generate, read_manifest
    from kappa_shop.proof.reach_edges import (
        Reach,
        add_edge_batches,
        add_old_day_batch,
        choose_old_day,
    )

    # (`make verify`'s scale: a week, with days of events around midnight to copy)
    generate(GeneratorConfig(seed=2, events=3000, days=7.0), tmp_path, progress=lambda _: None)

    def lines() -> dict[str, list[tuple[str, str]]]:
        """Every line of the log (its batch directory, its text), by topic and partition."""
        found: dict[str, list[tuple[str, str]]] = {}
        for path in sorted(tmp_path.glob("batch=*/topics/*/partition=*/*.jsonl")):
            for line in path.read_text().splitlines():
                found.setdefault(f"{path.parts[-3]}/{path.parts[-2]}", []).append(
                    (path.parts[-5], line)
                )
        return found

    old_day = choose_old_day(tmp_path)
    assert old_day is not None
    add_edge_batches(tmp_path, [Reach(), Reach(before=3600), Reach(after=1800)], old_day)
    before = lines()
    number = add_old_day_batch(tmp_path, old_day)
    after = lines()

    entry = read_manifest(tmp_path)["batches"][-1]
    assert entry["batch"] == number and entry["stragglers_only"]
    moved = [
        json.loads(line) for rows in after.values() for directory, line in rows
        if directory == entry["directory"]
    ]  # fmt: skip
    # events of one day, nothing else: two of each topic that has two that day, the earliest
    # and the latest (one where a topic has one: profile changes are rare)
    assert len(moved) == entry["records"] >= 10
    assert {record["event_time"][:10] for record in moved} == {entry["old_day"]}
    assert set(entry["records_by_topic"]) == {
        key.split("/")[0]
        for key, rows in before.items()
        for _, line in rows
        if f'"event_time":"{entry["old_day"]}' in line
    }
    assert all(1 <= count <= 2 for count in entry["records_by_topic"].values())
    # moved, not copied: the same lines, each once (a record keeps its offset)
    assert {key: sorted(line for _, line in rows) for key, rows in before.items()} == {
        key: sorted(line for _, line in rows) for key, rows in after.items()
    }
    assert sum(entry["records"] for entry in read_manifest(tmp_path)["batches"]) == sum(
        len(rows) for rows in after.values()
    )
    # the day has days of events before and after it, and lies two days or more from the day
    # before the first reach-edge midnight and the second's midnight (whose misses a later
    # run must not hide)
    day = datetime.fromisoformat(entry["old_day"])
    event_days = {
        line.split('"event_time":"')[1][:10]
        for rows in before.values()
        for _, line in rows
        if '"event_time":"' in line
    }
    assert (day - timedelta(days=1)).date().isoformat() in event_days
    assert (day + timedelta(days=1)).date().isoformat() in event_days
    edges = [e["reach_edges"].split() for e in read_manifest(tmp_path)["batches"][-3:-1]]
    missable = [
        datetime.fromisoformat(moment[:10]) - timedelta(days=1 if side == "after" else 0)
        for side, moment in edges
    ]
    assert min(abs((day - other).days) for other in missable) >= 2, (day, missable)


def test_the_reach_edge_batches_keep_each_side_of_a_midnight_apart(tmp_path):
    # (a days model with a reach of one hour before, one of 30 minutes after, and the
    # boundary itself), over four days: the first batch's copies all lie at or after one
    # midnight, the second's (delivered last) all before another, so that only the reach can
    # make a run recompute the day on the other side, and the second cannot recompute the day
    # the first tests
    from kappa_shop.log.generator import GeneratorConfig, generate, read_manifest
    from kappa_shop.proof.reach_edges import Reach, add_edge_batches

    generate(GeneratorConfig(seed=2, events=3000, days=4.0), tmp_path, progress=lambda _: None)
    last = max(entry["batch"] for entry in read_manifest(tmp_path)["batches"])
    reaches = [Reach(), Reach(before=3600), Reach(after=1800)]
    assert add_edge_batches(tmp_path, reaches) == [last + 1, last + 2]
    batches = read_manifest(tmp_path)["batches"][-2:]
    (first, after_midnight), (second, before_midnight) = (
        entry["reach_edges"].split() for entry in batches
    )
    assert (first, second) == ("after", "before")
    assert after_midnight != before_midnight
    assert after_midnight.endswith("T00:00:00.000Z") and before_midnight.endswith("T00:00:00.000Z")
    times = []
    for entry in batches:
        files = sorted((tmp_path / entry["directory"]).rglob("*.jsonl"))
        lines = [json.loads(line) for path in files for line in path.read_text().splitlines()]
        assert len(lines) == entry["records"] > 0
        times.append(sorted(line["event_time"] for line in lines))
    after, before = times
    assert after_midnight <= after[0] and before[-1] < before_midnight
    # the day the first batch tests (the one before its midnight) gets nothing from the second
    tested = (datetime.fromisoformat(after_midnight[:10]) - timedelta(days=1)).date().isoformat()
    assert not [moment for moment in before if moment.startswith(tested)]
    day = before_midnight[:10]
    previous = (datetime.fromisoformat(day) - timedelta(days=1)).date().isoformat()
    # inside the hour before: 1 s before midnight; outside it: 1 h 1 ms before; the boundary
    # itself: 1 ms before; and around the other midnight: at it, 29:59 and 30:00.001 after it
    assert f"{previous}T23:59:59.000Z" in before
    assert f"{previous}T22:59:59.999Z" in before
    assert f"{previous}T23:59:59.999Z" in before
    assert after_midnight in after
    assert f"{after_midnight[:11]}00:29:59.000Z" in after
    assert f"{after_midnight[:11]}00:30:00.001Z" in after


def test_the_proof_fails_when_the_incremental_filter_is_broken(
    spark, tmp_path, capsys, monkeypatch
):
    # A copy of the project whose batch filter skips the first new batch: a classic bug (an
    # off-by-one in "what is new"). `kappa-shop verify` must notice and exit 1. (Run in this
    # process, on its warm SparkSession, whose warehouse and metastore are the project copy's:
    # seed 7's schemas are no other test's. The models of one_model_per_mode: the planted
    # bug is in the package's filter, which every model uses; the traced paths are the Delta,
    # cluster and Kafka proofs'.)
    project = copy_project(tmp_path / "broken-project")
    # (the copy's installed package: dbt reads dbt_packages/kappa, a copy of packages/kappa)
    macro = project / "dbt_packages" / "kappa" / "macros" / "predicates" / "in_new_batches.sql"
    text = macro.read_text()
    correct = "between {{ kappa._first_new_batch() }} and"
    assert text.count(correct) == 1  # the bug below must really be planted
    macro.write_text(text.replace(correct, "between {{ kappa._first_new_batch() + 1 }} and"))
    monkeypatch.chdir(Path.cwd())  # (the command makes the copy its working directory)

    status = main(
        ["--project-dir", str(project), "verify", "--seeds", "7", "--events", "500",
         "--rounds", "3", "--days", "4", "--data-tests", "none",
         "--selector", "one_model_per_mode", "--no-repeats",
         "--work-dir", str(tmp_path / "proof")]
    )  # fmt: skip

    out, err = capsys.readouterr()
    assert status == 1, out[-3000:] + err[-3000:]
    # the diff alone caught it: no build ran a data test
    assert "; no data tests (the diff alone); the models of selector one_model_per_mode" in out
    tested = re.search(r"^Data tests run per build: (.*)$", out, re.M)
    assert tested, out[-3000:]
    builds = re.findall(
        r"(round \d+(?:, built again)?|replay of the last runs|full refresh) (\d+)", tested[1]
    )
    # 3 rounds, 2 reach-edge rounds and the old day's, the full refresh (no round built
    # again, no replay: --no-repeats)
    labels = [label for label, _ in builds]
    assert labels == [f"round {number}" for number in range(1, 7)] + ["full refresh"], tested[0]
    assert {count for _, count in builds} == {"0"}, tested[0]
    assert "DIFFERENT" in out
    assert "Proof FAILED" in out
    assert "the proof failed for seed(s) 7" in err


def test_a_gap_in_the_ingestion_receipts_stops_the_build(spark, project_copy, tmp_path):
    from kappa_shop.errors import KappaShopError
    from kappa_shop.ingest.ingestion import ingest
    from kappa_shop.log.generator import GeneratorConfig, generate
    from kappa_shop.log.landing import deliver

    log_dir, landing = tmp_path / "log", tmp_path / "landing"
    generate(GeneratorConfig(seed=6, events=300, days=1, batches=3), log_dir, lambda m: None)
    for batch in (1, 2, 3):
        deliver(log_dir, landing, [batch])
        ingest(spark, landing, "gap_test_raw", progress=lambda message: None)
    spark.sql(
        "alter table gap_test_raw.raw_ingestion_batches drop partition (ingestion_batch_id = 2)"
    )
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    project = project.elsewhere("gap_test", "gap_test_raw")

    with pytest.raises(KappaShopError):
        project.invoke("run", "--select", "stg_web__event_deliveries")

    results = (project.target_path() / "run_results.json").read_text()
    assert "have a gap: batch 2 is missing" in results
