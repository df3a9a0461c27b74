"""Bad input is never dropped silently: a log with every malformed kind the generator makes,
ingested batch by batch and staged, reports per ingestion batch and topic exactly what an
independent classifier (log_oracle) finds in the landed lines: accepted events, duplicates,
conflicting duplicates and each malformed kind, by reason. The quarantine holds every rejected
record with its raw text."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from log_oracle import classify, landed_lines

from kappa_shop.dbt import DbtProject
from kappa_shop.generator import MALFORMED_KINDS, GeneratorConfig, generate
from kappa_shop.ingest import ingest
from kappa_shop.landing import batch_numbers, deliver

LOG = GeneratorConfig(
    seed=21,
    events=1_500,
    days=1.0,
    batches=3,
    malformed_fraction=0.12,
    duplicate_fraction=0.04,
    conflict_fraction=0.02,
)
SCHEMA = "quarantine_test"
# the classifier's kinds that are not malformed, as delivery outcomes
OUTCOME = {
    "valid": "accepted",
    "duplicate": "duplicate",
    "conflicting_duplicate": "conflicting_duplicate",
}


@pytest.fixture(scope="module")
def staged(spark, project_copy, tmp_path_factory):
    """The log ingested one arrival batch per ingestion batch, then staging built (its data
    tests, conservation among them, included)."""
    root = tmp_path_factory.mktemp("quarantine")
    log_dir, landing = root / "log", root / "landing"
    generate(LOG, log_dir, progress=lambda message: None)
    for batch in batch_numbers(log_dir):
        deliver(log_dir, landing, [batch])
        ingest(spark, landing, f"{SCHEMA}_raw", progress=lambda message: None)
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAPPA_SHOP_SCHEMA", SCHEMA)
        project.invoke(
            "build", "--select", "staging", "--indirect-selection", "cautious",
            "--exclude-resource-type", "unit_test",
            "--vars", json.dumps({"raw_schema": f"{SCHEMA}_raw"}),
        )  # fmt: skip
    return log_dir, json.loads((log_dir / "manifest.json").read_text())


def _expected_outcomes(log_dir) -> Counter:
    """(ingestion batch, topic, outcome, reason) -> deliveries, by the independent classifier:
    arrival batch b became ingestion batch b, and a line's kind depends on what came before."""
    lines = list(landed_lines(log_dir))
    expected: Counter = Counter()
    before: dict[str, Counter] = {}
    for batch in sorted({line.batch for line in lines}):
        upto = classify(line for line in lines if line.batch <= batch).counts
        for topic, counts in upto.items():
            for kind, count in (counts - before.get(topic, Counter())).items():
                outcome = OUTCOME.get(kind, "malformed")
                reason = kind if kind not in ("valid", "duplicate") else "none"
                expected[(batch, topic, outcome, reason)] += count
        before = upto
    return expected


def test_every_malformed_kind_is_quarantined_with_its_reason(staged, spark):
    _, manifest = staged
    assert all(manifest["totals"]["malformed"][kind] > 0 for kind in MALFORMED_KINDS), manifest[
        "totals"
    ]["malformed"]

    quarantined = spark.sql(
        f"select quarantine_reason, count(*) as n, count(raw_record) as with_text "
        f"from {SCHEMA}.stg_log__quarantined_records group by quarantine_reason"
    ).collect()
    by_reason = {row["quarantine_reason"]: row["n"] for row in quarantined}
    assert all(row["n"] == row["with_text"] for row in quarantined)
    for kind in MALFORMED_KINDS:
        assert by_reason[kind] == manifest["totals"]["malformed"][kind], kind
    assert by_reason["conflicting_duplicate"] == manifest["totals"]["conflicting_duplicate"]
    assert sum(by_reason.values()) == (
        sum(manifest["totals"]["malformed"].values()) + manifest["totals"]["conflicting_duplicate"]
    )


def test_outcomes_per_batch_and_reason_equal_an_independent_classification(staged, spark):
    log_dir, manifest = staged
    rows = spark.sql(
        f"select _ingestion_batch_id, topic, outcome, quarantine_reason, deliveries "
        f"from {SCHEMA}.stg_log__delivery_outcomes"
    ).collect()
    reported = Counter(
        {
            (
                row["_ingestion_batch_id"],
                row["topic"],
                row["outcome"],
                row["quarantine_reason"],
            ): row["deliveries"]
            for row in rows
        }
    )

    assert reported == _expected_outcomes(log_dir)
    # conservation: every landed record is counted once
    assert sum(reported.values()) == manifest["totals"]["records"]
    assert {key[0] for key in reported} == set(range(1, len(manifest["batches"]) + 1))
