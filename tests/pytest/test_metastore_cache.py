"""The embedded Hive metastore's store (java/, `hive.metastore.rawstore.impl` in profiles.yml):
Hive's ObjectStore with its table and database look-ups kept in memory between changes. Every
answer must be the one Hive's own store gives: after each kind of change the project makes
(create, insert, add and drop partitions, alter, rename, drop, a schema dropped with its
tables), and while another thread changes the same table."""

from __future__ import annotations

import threading
from typing import Any

import pytest

OURS = "kappa_shop.metastore.CachingObjectStore"
SCHEMA = "metastore_cache_check"


def _store(spark: Any) -> Any:
    return spark._jvm.kappa_shop.metastore.CachingObjectStore


def _columns(spark: Any, table: str) -> list[str]:
    return [row.col_name for row in spark.sql(f"describe table {table}").collect()]


def _property(spark: Any, table: str, key: str) -> str | None:
    rows = spark.sql(f"show tblproperties {table}").collect()
    return {row.key: row.value for row in rows}.get(key)


@pytest.fixture
def schema(spark: Any) -> Any:
    """A schema of its own for each test, dropped with its tables afterwards."""
    spark.sql(f"drop schema if exists {SCHEMA} cascade")
    spark.sql(f"create schema {SCHEMA}")
    yield SCHEMA
    spark.sql(f"drop schema if exists {SCHEMA} cascade")


def test_the_embedded_metastore_uses_the_caching_store_with_every_method_classified(spark):
    assert spark.conf.get("spark.hadoop.hive.metastore.rawstore.impl") == OURS
    # a RawStore method that is neither a look-up nor overridden would turn the cache off
    assert list(_store(spark).unclassifiedMethods()) == []
    assert _store(spark).enabled()


def test_look_ups_are_served_from_the_cache_and_see_every_change(spark, schema):
    table = f"{schema}.events"
    spark.sql(
        f"create table {table} (event_id string, day date) using parquet partitioned by (day)"
    )
    hits = _store(spark).hits()
    for _ in range(3):
        assert _columns(spark, table) == ["event_id", "day", "# Partition Information",
                                          "# col_name", "day"]  # fmt: skip
    assert _store(spark).hits() > hits  # the repeated look-ups did not go to Derby

    spark.sql(f"insert into {table} values ('a', date'2024-03-01'), ('b', date'2024-03-02')")
    assert spark.sql(f"select count(*) from {table}").first()[0] == 2
    assert sorted(r[0] for r in spark.sql(f"show partitions {table}").collect()) == [
        "day=2024-03-01",
        "day=2024-03-02",
    ]
    spark.sql(f"alter table {table} drop partition (day = date'2024-03-01')")
    assert [r[0] for r in spark.sql(f"show partitions {table}").collect()] == ["day=2024-03-02"]
    assert [r[0] for r in spark.sql(f"select event_id from {table}").collect()] == ["b"]

    spark.sql(f"alter table {table} add columns (user_id string)")
    assert _columns(spark, table)[:3] == ["event_id", "user_id", "day"]
    spark.sql(f"alter table {table} set tblproperties ('kappa.check' = 'one')")
    assert _property(spark, table, "kappa.check") == "one"
    spark.sql(f"alter table {table} set tblproperties ('kappa.check' = 'two')")
    assert _property(spark, table, "kappa.check") == "two"

    spark.sql(f"alter table {table} rename to {schema}.events_renamed")
    assert not spark.catalog.tableExists(table)
    assert spark.catalog.tableExists(f"{schema}.events_renamed")
    assert [r[0] for r in spark.sql(f"select event_id from {schema}.events_renamed").collect()] == [
        "b"
    ]

    spark.sql(f"create table {table} (order_id bigint) using parquet")
    assert _columns(spark, table) == ["order_id"]
    spark.sql(f"drop table {table}")
    assert not spark.catalog.tableExists(table)

    spark.sql(f"drop schema {schema} cascade")
    assert not spark.catalog.databaseExists(schema)
    assert not spark.catalog.tableExists(f"{schema}.events_renamed")


def test_a_change_in_one_thread_is_seen_by_the_look_ups_of_another(spark, schema):
    table = f"{schema}.counter"
    spark.sql(f"create table {table} (id int) using parquet tblproperties ('kappa.n' = '0')")
    changes = 25
    seen: list[int] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(int(_property(spark, table, "kappa.n")))
        except BaseException as error:  # reported by the test below
            failures.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(1, changes + 1):
            spark.sql(f"alter table {table} set tblproperties ('kappa.n' = '{n}')")
            # the changing thread sees its change at once
            assert int(_property(spark, table, "kappa.n")) == n
    finally:
        done.set()
        reader.join()
    assert not failures, failures
    assert len(seen) > changes  # the reader ran while the table changed
    # once a reader has seen a change it never sees an older state again
    assert seen == sorted(seen), seen
    assert int(_property(spark, table, "kappa.n")) == changes
