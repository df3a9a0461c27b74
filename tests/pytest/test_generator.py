"""The generator on its own (no Spark): deterministic, reconciled with its manifest by an
independent reading of every line, and shaped like a real shop's log."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from log_oracle import ENVELOPE_REQUIRED, classify, landed_lines

from kappa_shop.errors import KappaShopError
from kappa_shop.log.delivery import MALFORMED_KINDS
from kappa_shop.log.format import TOPICS
from kappa_shop.log.generator import GeneratorConfig, generate

# Imperfections turned up so that every kind shows up in a small log.
TOPICS_KEY = {topic.name: topic.key_field for topic in TOPICS}
SMALL = GeneratorConfig(
    seed=11,
    events=30_000,
    days=3,
    batches=8,
    malformed_fraction=0.01,
    conflict_fraction=0.005,
    duplicate_fraction=0.02,
)


def _tree_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(directory)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _event_time(record: dict) -> datetime:
    return datetime.strptime(record["event_time"], "%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    """One small generated log, shared by the tests of this module."""
    out = tmp_path_factory.mktemp("log") / "small"
    generate(SMALL, out, progress=lambda message: None)
    return out


@pytest.fixture(scope="module")
def manifest(small_log) -> dict:
    return json.loads((small_log / "manifest.json").read_text())


@pytest.fixture(scope="module")
def classified(small_log):
    return classify(landed_lines(small_log))


def test_same_seed_same_bytes_other_seed_other_bytes(small_log, tmp_path):
    again = tmp_path / "again"
    other = tmp_path / "other"
    generate(SMALL, again, progress=lambda message: None)
    generate(GeneratorConfig(**{**SMALL.__dict__, "seed": 12}), other, progress=lambda m: None)

    assert _tree_digest(again) == _tree_digest(small_log)
    assert _tree_digest(other) != _tree_digest(small_log)


def test_reaches_the_requested_scale(manifest):
    # traffic is spread over the whole period, so the count lands within a few percent
    assert SMALL.events * 0.95 <= manifest["totals"]["valid"] <= SMALL.events * 1.01


def test_every_line_reconciles_with_the_manifest_per_stream_and_kind(manifest, classified):
    for topic in TOPICS:
        expected = manifest["by_topic"][topic.name]
        found = classified.counts.get(topic.name, Counter())
        assert found["valid"] == expected["valid"], topic.name
        assert found["duplicate"] == expected["duplicate"], topic.name
        assert found["conflicting_duplicate"] == expected["conflicting_duplicate"], topic.name
        for kind in MALFORMED_KINDS:
            assert found[kind] == expected["malformed"][kind], (topic.name, kind)
        assert sum(found.values()) == expected["records"], topic.name
        assert classified.drift[topic.name] == expected["schema_drift"], topic.name


def test_every_imperfection_occurs(manifest):
    totals = manifest["totals"]
    for kind in MALFORMED_KINDS:
        assert totals["malformed"][kind] > 0, kind
    for name in ("duplicate", "conflicting_duplicate", "late", "schema_drift"):
        assert totals[name] > 0, name
    assert manifest["lateness_of_late_events"]["days"] > 0  # the long tail


def test_batches_and_offsets_are_those_of_a_broker_sink(small_log, manifest):
    lines_per_batch: Counter = Counter()
    offsets: dict[tuple[str, int], list[int]] = defaultdict(list)
    lines_per_partition: Counter = Counter()
    for line in landed_lines(small_log):
        lines_per_batch[line.batch] += 1
        lines_per_partition[(line.topic, line.partition)] += 1
        if line.text.startswith("{") and line.text.endswith("}"):
            record = json.loads(line.text)
            assert record["topic"] == line.topic
            assert record["partition"] == line.partition
            assert record["offset"] >= line.file_first_offset
            offsets[(line.topic, line.partition)].append(record["offset"])

    assert [lines_per_batch[entry["batch"]] for entry in manifest["batches"]] == [
        entry["records"] for entry in manifest["batches"]
    ]
    for key, seen in offsets.items():
        assert seen == sorted(seen) and len(set(seen)) == len(seen), key  # monotonic
        assert max(seen) < lines_per_partition[key]  # no offset beyond the lines landed
        topic, partition = key
        assert manifest["partition_end_offsets"][f"{topic}/{partition}"] == lines_per_partition[key]


def test_envelope_of_valid_records(classified):
    for record in classified.valid_records[:2000]:
        assert all(name in record for name in ENVELOPE_REQUIRED)
        assert record["schema_version"] == 1
        assert record["key"] == record["payload"][TOPICS_KEY[record["topic"]]]


def test_delivery_is_late_and_out_of_order(small_log, classified):
    batch_span = timedelta(days=SMALL.days) / SMALL.batches
    start = datetime.strptime(SMALL.start, "%Y-%m-%d")
    lateness = [
        start + batch_span * (record["_batch"] - 1) - _event_time(record)
        for record in classified.valid_records
    ]
    assert max(lateness) > timedelta(days=1)  # some arrive days after their batch's window
    # within one batch file, offsets follow arrival, not event time: late events sit among
    # newer ones
    out_of_order = 0
    for line_group in _by_file(small_log).values():
        times = [_event_time(record) for record in line_group]
        out_of_order += sum(1 for earlier, later in pairwise(times) if later < earlier)
    assert out_of_order > 0


def _by_file(log_dir: Path) -> dict[tuple[int, str, int], list[dict]]:
    groups: dict[tuple[int, str, int], list[dict]] = defaultdict(list)
    for line in landed_lines(log_dir):
        try:
            record = json.loads(line.text)
            _event_time(record)
        except (ValueError, KeyError, TypeError):
            continue
        groups[(line.batch, line.topic, line.partition)].append(record)
    return groups


def test_behaviour_looks_like_a_shop(classified):
    by_type: dict[str, list[dict]] = defaultdict(list)
    for record in classified.valid_records:
        by_type[record["event_type"]].append(record)

    # browsing comes in bursts: most gaps between a user's views are short, some exceed 30 min
    views: dict[str, list[datetime]] = defaultdict(list)
    for record in by_type["page_view"]:
        views[record["payload"]["user_id"]].append(_event_time(record))
    gaps = [
        later - earlier for times in views.values() for earlier, later in pairwise(sorted(times))
    ]
    short = sum(1 for gap in gaps if gap < timedelta(minutes=5))
    long = sum(1 for gap in gaps if gap > timedelta(minutes=30))
    assert short > 0.6 * len(gaps) and long > 0

    # searches are sometimes followed by a click on a product they showed
    shown = {
        (record["payload"]["user_id"], product)
        for record in by_type["search"]
        for product in record["payload"]["result_product_ids"]
    }
    clicks = by_type["search_result_click"]
    assert 0 < len(clicks) < len(by_type["search"])
    assert sum(
        (click["payload"]["user_id"], click["payload"]["product_id"]) in shown for click in clicks
    ) > 0.9 * len(clicks)

    # orders move through their lifecycle; inventory follows orders; profiles change
    for event_type in (
        "order_placed",
        "order_paid",
        "order_shipped",
        "order_cancelled",
        "payment_failed",
    ):
        assert by_type[event_type], event_type
    assert len(by_type["order_paid"]) < len(by_type["order_placed"])
    assert by_type["reservation"] and by_type["release"] and by_type["restock"]
    assert by_type["user_updated"] and by_type["user_deleted"]
    lsns = [
        record["payload"]["lsn"] for record in by_type["user_created"] + by_type["user_updated"]
    ]
    assert len(set(lsns)) == len(lsns)


def test_refuses_bad_settings_with_one_line(tmp_path):
    from kappa_shop.errors import KappaShopError

    with pytest.raises(KappaShopError, match="--events must be at least 1"):
        generate(GeneratorConfig(events=-1), tmp_path / "a", progress=lambda m: None)
    with pytest.raises(KappaShopError, match="--late-fraction must be between 0 and 1"):
        generate(GeneratorConfig(late_fraction=1.5), tmp_path / "b", progress=lambda m: None)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(KappaShopError, match="is not empty"):
        generate(GeneratorConfig(), tmp_path / "full", progress=lambda m: None)


def test_held_back_events_arrive_after_the_period_at_most_three_days_late(tmp_path):
    # the benchmark's late data: with late_fraction 0, the stragglers batch holds exactly the
    # held-back events, each from the last three days of the period
    config = GeneratorConfig(
        seed=5, events=20_000, days=10, batches=20, late_fraction=0.0, duplicate_fraction=0.0,
        conflict_fraction=0.0, malformed_fraction=0.0, held_back_fraction=0.05,
        held_back_days=3.0,
    )  # fmt: skip
    manifest = generate(config, tmp_path / "log", progress=lambda m: None).manifest
    held_back = manifest["lateness_of_late_events"]["held_back"]
    assert held_back > 100 and manifest["totals"]["late"] == held_back
    end = datetime(2024, 3, 11, tzinfo=UTC)
    stragglers = [line for line in landed_lines(tmp_path / "log") if line.batch == 21]
    assert len(stragglers) == held_back
    for line in stragglers:
        happened = datetime.fromisoformat(json.loads(line.text)["event_time"])
        assert end - timedelta(days=3) <= happened < end, line.text
    with pytest.raises(KappaShopError, match="--held-back-days must be"):
        generate(GeneratorConfig(days=2, held_back_fraction=0.1), tmp_path / "x", progress=print)


def test_a_log_can_continue_past_another_logs_offsets_and_lsns(tmp_path):
    # the benchmark appends one fixed batch after histories of two sizes: its offsets and its
    # profile changes' LSNs start past theirs; the events are those of the same settings from
    # offset 0 and LSN 1
    settings = {"seed": 9, "events": 2_000, "days": 2, "batches": 4}
    logs = {}
    for first in (0, 1_000_000):
        config = GeneratorConfig(**settings, first_offset=first, first_lsn=first)
        logs[first] = generate(config, tmp_path / str(first), progress=lambda m: None)
    offsets: dict[tuple[str, int], list[int]] = defaultdict(list)
    for line in landed_lines(tmp_path / "1000000"):
        assert line.file_first_offset >= 1_000_000
        if line.text.startswith("{") and line.text.endswith("}"):
            record = json.loads(line.text)
            offsets[(record["topic"], record["partition"])].append(record["offset"])
    ends = logs[1_000_000].manifest["partition_end_offsets"]
    for (topic, partition), seen in offsets.items():
        assert min(seen) >= 1_000_000 and ends[f"{topic}/{partition}"] > max(seen)
    for first in logs:
        assert logs[first].manifest["totals"] == logs[0].manifest["totals"]
    lsns: dict[int, list[int]] = {
        first: [int(lsn) for line in landed_lines(tmp_path / str(first))
                for lsn in re.findall(r'"lsn": ?(\d+)', line.text)]
        for first in logs
    }  # fmt: skip
    assert len(lsns[0]) > 20 and max(lsns[0]) < 1_000
    assert [lsn - 1_000_000 for lsn in lsns[1_000_000]] == lsns[0]

    def unshifted(text: str, first: int) -> str:
        text = re.sub(r'"offset":\d+', "", text)
        return re.sub(r'("lsn": ?)(\d+)', lambda m: f"{m[1]}{int(m[2]) - first}", text)

    texts = {
        first: [unshifted(line.text, first) for line in landed_lines(tmp_path / str(first))]
        for first in logs
    }
    assert texts[0] == texts[1_000_000] and len(texts[0]) > 2_000
    with pytest.raises(KappaShopError, match=r"--first-offset must be 0\.\.100000000000"):
        generate(GeneratorConfig(first_offset=-1), tmp_path / "x", progress=print)
    with pytest.raises(KappaShopError, match=r"--first-lsn must be 0\.\.100000000000"):
        generate(GeneratorConfig(first_lsn=-1), tmp_path / "y", progress=print)


def test_the_catalog_seed_is_the_generators_catalog():
    from conftest import REPO_ROOT

    from kappa_shop.log.catalog import as_csv

    seed = REPO_ROOT / "seeds" / "reference" / "product_catalog.csv"
    assert seed.read_text() == as_csv()


def test_a_log_is_reused_only_for_the_settings_it_was_made_with(tmp_path):
    # (the benchmarks' reuse: kappa_shop.bench.recorder.generate_log and the live benchmark)
    from dataclasses import replace

    from kappa_shop.log.generator import made_with

    config = GeneratorConfig(seed=3, events=1_000, days=1, batches=2)
    assert not made_with(tmp_path / "log", config)
    generate(config, tmp_path / "log", progress=lambda m: None)
    assert made_with(tmp_path / "log", config)
    assert not made_with(tmp_path / "log", replace(config, first_lsn=10))
    # a log made before a knob existed: its manifest lacks it, which counts at its default
    manifest = json.loads((tmp_path / "log" / "manifest.json").read_text())
    del manifest["config"]["first_lsn"]
    (tmp_path / "log" / "manifest.json").write_text(json.dumps(manifest))
    assert made_with(tmp_path / "log", config)
    assert not made_with(tmp_path / "log", replace(config, first_lsn=10))
