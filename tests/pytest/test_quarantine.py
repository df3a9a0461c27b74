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

from kappa_shop.ingest.ingestion import ingest
from kappa_shop.log.delivery import MALFORMED_KINDS
from kappa_shop.log.generator import GeneratorConfig, generate
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.runtime.dbt import DbtProject

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
    project = project.elsewhere(SCHEMA, f"{SCHEMA}_raw")
    project.invoke(
        "build", "--select", "staging", "--indirect-selection", "cautious",
        "--exclude-resource-type", "unit_test",
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


# Event times as producers write them, each with the UTC instant it names (worked out by hand),
# and forms that name none
RFC3339_FORMS = [
    ("2024-03-01T10:00:00Z", "2024-03-01 10:00:00"),  # no fraction
    ("2024-03-01T10:00:00.120Z", "2024-03-01 10:00:00.12"),  # milliseconds (the generator's)
    ("2024-03-01T10:00:00.5Z", "2024-03-01 10:00:00.5"),  # one digit
    ("2024-03-01T10:00:00.123456Z", "2024-03-01 10:00:00.123456"),  # microseconds
    ("2024-03-01T12:00:00+02:00", "2024-03-01 10:00:00"),  # an offset east
    ("2024-03-01T05:30:00.25-04:30", "2024-03-01 10:00:00.25"),  # west, with a fraction
    ("2024-03-02T00:30:00+14:30", "2024-03-01 10:00:00"),  # another day there
    ("2024-02-29T23:00:00-11:00", "2024-03-01 10:00:00"),  # the day before there
    ("2024-03-01T10:00:00+00:00", "2024-03-01 10:00:00"),  # zero as an offset
    ("2024-03-01t10:00:00z", "2024-03-01 10:00:00"),  # lower case (RFC 3339, 5.6)
    ("2024-03-01 10:00:00.001Z", "2024-03-01 10:00:00.001"),  # a space for T (5.6)
]
NO_INSTANT = [
    "2024-03-01T10:00:00",  # no offset: a local time of no known zone
    "2024-03-01T10:00:00.1234567Z",  # finer than microseconds
    "2024-03-01T10:00:00+0200",  # an offset without its colon (ISO 8601 basic, not RFC 3339)
    "2024-13-01T10:00:00Z",  # no month 13
    "2024-02-30T10:00:00Z",  # no 30 February
    "2024-03-01T24:00:00Z",  # no hour 24
    "2024-03-01",  # a date alone
    "1709287200000",  # epoch milliseconds, in a string
    1709287200000,  # and as a number, where the stream declares RFC 3339
]


def _stage_files(spark, project_copy, schema, files, log_streams=None) -> list:
    """`files` (name: bytes) landed in web_events, partition 0, ingested into <schema>_raw and
    staged (stg_web__event_deliveries, with `log_streams` for the var when given): the staged
    rows."""
    landing = project_copy / "data" / schema / "landing"
    directory = landing / "topics" / "web_events" / "partition=0"
    directory.mkdir(parents=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
    ingest(spark, landing, f"{schema}_raw", progress=lambda message: None)
    dbt_vars = {} if log_streams is None else {"log_streams": log_streams}
    project = DbtProject(root=project_copy, profiles_dir=project_copy)
    project = project.elsewhere(schema, f"{schema}_raw")
    project.invoke("run", "--select", "stg_web__event_deliveries", "--quiet", dbt_vars=dbt_vars)
    return spark.sql(
        "select _source_file, log_offset, event_id, event_type, "
        "date_format(occurred_at, 'yyyy-MM-dd HH:mm:ss.SSSSSS') as at, invalid_reason, "
        f"outcome, hex(raw_record) as raw_hex from {schema}.stg_web__event_deliveries"
    ).collect()


def _stage_records(spark, project_copy, schema, records, log_streams=None) -> dict:
    """`records` (page views) landed in one file of web_events, partition 0, at offsets 0, 1,
    ..., and staged (_stage_files): each record's (event_id, event_type, occurred_at as text,
    invalid_reason), by its offset."""
    from kappa_shop.log.format import encode

    envelope = {"topic": "web_events", "partition": 0, "key": "u-1"}
    lines = [
        encode({**envelope, "offset": offset, **record}) for offset, record in enumerate(records)
    ]
    content = "".join(line + "\n" for line in lines).encode()
    rows = _stage_files(spark, project_copy, schema, {"web_events+0+0.jsonl": content}, log_streams)
    return {
        row["log_offset"]: (row["event_id"], row["event_type"], row["at"], row["invalid_reason"])
        for row in rows
    }


def _stage_event_times(spark, project_copy, schema, times, log_streams=None) -> dict:
    """Page views whose event times are `times`, staged (_stage_records): each record's
    (occurred_at as text, invalid_reason), by its position in `times`."""
    records = [
        {"event_id": f"e-{offset}", "event_type": "page_view", "event_time": time,
         "schema_version": 1, "payload": {"user_id": "u-1", "page_path": "/"}}
        for offset, time in enumerate(times)
    ]  # fmt: skip
    staged = _stage_records(spark, project_copy, schema, records, log_streams)
    return {offset: (at, reason) for offset, (_, _, at, reason) in staged.items()}


def _micros(instant: str) -> str:
    """'2024-03-01 10:00:00.12' as Spark writes it with six digits of fraction."""
    day_time, _, fraction = instant.partition(".")
    return f"{day_time}.{fraction.ljust(6, '0')}"


def test_every_rfc3339_form_names_its_utc_instant_and_the_rest_are_quarantined(spark, project_copy):
    times = [form for form, _ in RFC3339_FORMS] + NO_INSTANT
    staged = _stage_event_times(spark, project_copy, "event_time_forms", times)

    assert len(staged) == len(times)  # nothing dropped
    for position, (form, instant) in enumerate(RFC3339_FORMS):
        assert staged[position] == (_micros(instant), None), form
    for position, form in enumerate(NO_INSTANT, start=len(RFC3339_FORMS)):
        assert staged[position] == (None, "unparseable_event_time"), form


def test_a_stream_that_declares_epoch_milliseconds_takes_them(spark, project_copy):
    import yaml

    streams = yaml.safe_load((project_copy / "dbt_project.yml").read_text())["vars"]["log_streams"]
    streams["web_events"]["event_time_format"] = "epoch_millis"
    times = [1709287200000, 1709287200123, 0, -1000, 4102444800000, 1.5e12, "2024-03-01T10:00:00Z"]
    staged = _stage_event_times(spark, project_copy, "event_time_millis", times, streams)

    assert staged == {
        0: ("2024-03-01 10:00:00.000000", None),
        1: ("2024-03-01 10:00:00.123000", None),
        2: ("1970-01-01 00:00:00.000000", None),
        3: ("1969-12-31 23:59:59.000000", "event_time_before_epoch"),
        4: ("2100-01-01 00:00:00.000000", "event_time_in_future"),
        5: (None, "unparseable_event_time"),  # a JSON number, but not an integer
        6: (None, "unparseable_event_time"),  # RFC 3339, where the stream declares milliseconds
    }


def test_a_stream_names_where_its_producers_put_the_event_fields(spark, project_copy):
    import yaml

    streams = yaml.safe_load((project_copy / "dbt_project.yml").read_text())["vars"]["log_streams"]
    streams["web_events"]["event_fields"] = {
        "event_id": "id", "event_type": "kind", "event_time": "meta.at", "payload": "data",
    }  # fmt: skip
    view = {"user_id": "u-1", "page_path": "/"}
    records = [
        # the stream's own names: staged, its time normalised to UTC
        {"id": "e-0", "kind": "page_view", "meta": {"at": "2024-03-01T12:00:00+02:00"},
         "data": view},
        # no time where the stream says it is
        {"id": "e-1", "kind": "page_view", "meta": {}, "data": view},
        # the default names, which this stream does not use: no id, no time
        {"event_id": "e-2", "event_type": "page_view", "event_time": "2024-03-01T10:00:00Z",
         "payload": view},
        # a payload without a field the event type requires
        {"id": "e-3", "kind": "page_view", "meta": {"at": "2024-03-01T10:00:00Z"},
         "data": {"user_id": "u-1"}},
    ]  # fmt: skip
    staged = _stage_records(spark, project_copy, "event_fields", records, streams)

    assert staged == {
        0: ("e-0", "page_view", "2024-03-01 10:00:00.000000", None),
        1: ("e-1", "page_view", None, "missing_required_field"),
        2: (None, None, None, "missing_required_field"),
        3: ("e-3", "page_view", "2024-03-01 10:00:00.000000", "missing_required_field"),
    }


def _page_view(offset: int, extra: str = "") -> str:
    """A valid page view's line (event id e-<offset>), `extra` added to its payload as JSON
    text."""
    return (
        f'{{"topic":"web_events","partition":0,"offset":{offset},"key":"u-1",'
        f'"event_id":"e-{offset}","event_type":"page_view",'
        f'"event_time":"2024-03-01T10:00:00Z","schema_version":1,'
        f'"payload":{{"user_id":"u-1","page_path":"/"{extra}}}}}'
    )


# hostile bytes, a file each: its content, and each line's expected (event_id, invalid_reason)
# in file order
HOSTILE = {
    # a byte-order mark before the first line, as some editors write: the line it precedes
    "bom": (b"\xef\xbb\xbf" + _page_view(0).encode() + b"\n", [("e-0", None)]),
    # Windows line ends: two lines, each valid
    "crlf": ((_page_view(1) + "\r\n" + _page_view(2) + "\r\n").encode(),
             [("e-1", None), ("e-2", None)]),
    # Latin-1 bytes in a string (not UTF-8): read as text they would turn into U+FFFD
    "latin1": (_page_view(3, ', "note": "caf\xe9"').encode("latin-1") + b"\n",
               [("e-3", "invalid_utf8")]),
    # a raw NUL byte in a string (JSON wants control characters escaped)
    "nul": (_page_view(4, ', "note": "a\x00b"').encode() + b"\n", [(None, "not_json")]),
    "nan": (_page_view(5, ', "score": NaN').encode() + b"\n", [(None, "not_json")]),
    "infinity": (_page_view(6, ', "score": -Infinity').encode() + b"\n", [(None, "not_json")]),
    # a key twice in one object: JSON text, but not one VARIANT can hold
    "duplicate_key": (_page_view(7, ', "user_id": "u-2"').encode() + b"\n", [(None, "not_json")]),
    "deep": (_page_view(8, ', "tree": ' + "[" * 5_000 + "]" * 5_000).encode() + b"\n",
             [(None, "not_json")]),
    # a number beyond 64 bits, in a field no event type declares: valid JSON, kept
    "big_number": (_page_view(9, ', "huge": 123456789012345678901234567890123456789012').encode()
                   + b"\n", [("e-9", None)]),
    # over a megabyte in one line
    "huge_line": (_page_view(10, ', "pad": "' + "x" * 1_100_000 + '"').encode() + b"\n",
                  [("e-10", "oversize_record")]),
    # the last line cut off (no line end): what a producer that died mid-write leaves
    "cut": (_page_view(11).encode()[:70], [(None, "not_json")]),
    "empty": (b"", []),
}  # fmt: skip


def test_hostile_bytes_are_quarantined_with_a_reason_or_read_as_the_lines_they_are(
    spark, project_copy
):
    files = {f"web_events+0+{name}.jsonl": content for name, (content, _) in HOSTILE.items()}
    rows = _stage_files(spark, project_copy, "hostile_bytes", files)

    by_file: dict = {}
    for row in rows:
        by_file.setdefault(row["_source_file"].rsplit("+", 1)[1].removesuffix(".jsonl"), []).append(
            row
        )
    # every line of every file is one staged row (nothing dropped, nothing split or merged)
    assert sum(len(expected) for _, expected in HOSTILE.values()) == len(rows)
    for name, (_, expected) in HOSTILE.items():
        found = sorted(by_file.get(name, []), key=lambda row: row["raw_hex"])
        got = sorted(((row["event_id"], row["invalid_reason"]) for row in found), key=str)
        assert got == sorted(expected, key=str), name
        for row in found:
            quarantined = row["invalid_reason"] is not None
            assert row["outcome"] == ("malformed" if quarantined else "accepted"), (name, row)
    # the bytes that are not UTF-8 are in the raw table as they landed
    (latin1,) = by_file["latin1"]
    assert latin1["raw_hex"] == HOSTILE["latin1"][0].rstrip(b"\n").hex().upper()
