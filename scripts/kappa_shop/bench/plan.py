"""The benchmark's plan: its log at a scale (bench_log_config), the fixed batch of the
proportionality steps (bench_batch_config), how the log's arrival batches split into a base and
the 1% steps (plan_batches, plan_successive), the baselines' models and vars, and the names of
the steps and check points the runner records and the report reads. No Spark."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.log.config import MAX_FIRST_OFFSET
from kappa_shop.log.generator import GeneratorConfig

DAYS = 30.0
BATCHES = 200
INCREMENT = 0.01  # each incremental step: 1% of the records
LATE_SHARE = 0.1  # of a late step's records, this share arrives days late
# the +1% late step's late events reach this far back: past the usual alternative's 3-day
# lookback (var kappa_bench_lookback_days), so that the rows it misses show
HELD_BACK_DAYS = 6.0
# the fixed batch of the proportionality steps: its late events reach this far back
LATE_DAYS = 3.0
MICROBATCH_MODEL = "bench_orders_daily_microbatch"
# the usual alternative for late data: a day model as dbt-spark's standard incremental
# (insert_overwrite by day, a 3-day lookback; generated from the model: bench.baselines),
# beside the project's model
LOOKBACK_MODELS = {
    "orders_daily": "bench_orders_daily_lookback",
    "page_views": "bench_page_views_lookback",
    "sessions": "bench_sessions_lookback",
}
BASELINE_MODELS = (MICROBATCH_MODEL, *LOOKBACK_MODELS.values())
# what the benchmark's own steps build whatever `--select` says: the day models with a lookback
# baseline (orders_daily also the backfill's, sessions and orders_daily the hand-written job's)
# and everything they are built from
ALWAYS_SELECTED = tuple(f"+{model}" for model in LOOKBACK_MODELS)
BASELINE_VARS = {"kappa_bench_baselines": True}
# the fair floor: the project's models built as plain dbt tables, in a schema of their own
# (the var is the benchmark's project's: bench.baselines)
PLAIN_VARS = {"kappa_bench_plain_tables": True}
PLAIN_SUFFIX = "_plain"
# proportionality: one fixed batch of new events (at most BATCH_EVENTS, a tenth of them days
# late) applied to the benchmark's history and to a history a tenth of its size
BATCH_EVENTS = 10_000
SMALL_SUFFIX = "_tenth"
# where every model is checked against a full refresh of the same records (check_every_model)
LATE_POINT = "after the late step"
BATCH_POINT = "after the fixed batch"
TENTH_POINT = "after the fixed batch on a tenth"
SUCCESSIVE_POINT = "after the last run"
# the steps the report compares with each other (names as the report prints them)
PLAIN_STEP = "full refresh as plain dbt tables"
WARM_STEP = "full refresh again, warm"
BATCH_ON_HISTORY_STEP = "the fixed batch on the whole history"
BATCH_ON_TENTH_STEP = "the fixed batch on a tenth of the history"
# The driver (heap) of the process that ingests the base alone: the same at every scale
ALONE_DRIVER_MEMORY = "1g"
ALONE_RAW_SCHEMA = "bench_alone_raw"


def bench_batch_config(events: int, seed: int) -> GeneratorConfig:
    """The fixed batch of the proportionality steps, for a benchmark at `events`: 1% of the
    events, at least 1,000 and at most BATCH_EVENTS, over the LATE_DAYS days after the
    history's period, a tenth of them held back to arrive last (up to LATE_DAYS days late),
    all delivered at once; its offsets and its profile changes' LSNs start past every one of
    both histories. Its users, orders and products come from the same id ranges as the
    histories', so it touches keys they hold, as new data does."""
    history = bench_log_config(events, seed)
    start = datetime.strptime(history.start, "%Y-%m-%d") + timedelta(days=history.days)
    return replace(
        history,
        seed=seed + 1,
        events=max(1_000, min(BATCH_EVENTS, events // 100)),
        days=LATE_DAYS,
        start=start.strftime("%Y-%m-%d"),
        batches=1,
        held_back_fraction=LATE_SHARE,
        held_back_days=LATE_DAYS,
        first_offset=MAX_FIRST_OFFSET,
        first_lsn=MAX_FIRST_OFFSET,
    )


def bench_log_config(events: int, seed: int) -> GeneratorConfig:
    """The benchmark's log at a scale (see the module docstring)."""
    return GeneratorConfig(
        seed=seed,
        events=events,
        days=DAYS,
        batches=BATCHES,
        late_fraction=0.0,
        duplicate_fraction=0.01,
        conflict_fraction=0.0,
        malformed_fraction=0.0,
        # events of the last HELD_BACK_DAYS days are HELD_BACK_DAYS / DAYS of the log: hold
        # back enough of them to make LATE_SHARE of one increment
        held_back_fraction=LATE_SHARE * INCREMENT * DAYS / HELD_BACK_DAYS,
        held_back_days=HELD_BACK_DAYS,
    )


def plan_batches(manifest: dict[str, Any]) -> dict[str, list[int]]:
    """Split the arrival batches into base, +1% and +1% late by record counts."""
    batches = {entry["batch"]: entry["records"] for entry in manifest["batches"]}
    stragglers = max(batches)
    on_time = sorted(number for number in batches if number != stragglers)
    share = INCREMENT * sum(batches.values())
    late_group = [*_take_last(on_time, batches, share, batches[stragglers]), stragglers]
    plain_group = _take_last(on_time, batches, share)
    if not on_time:
        raise KappaShopError("the log is too small to split into a base and two 1% steps")
    return {"base": on_time, "plus_1pct": plain_group, "plus_1pct_late": late_group}


def plan_successive(manifest: dict[str, Any], runs: int) -> dict[str, list[int]]:
    """Split the on-time arrival batches into a base and `runs` groups of about 1% of the
    records each, in arrival order (the stragglers batch, the held-back late events, is left
    out: every run here is on time)."""
    batches = {entry["batch"]: entry["records"] for entry in manifest["batches"]}
    on_time = sorted(number for number in batches if number != max(batches))
    share = INCREMENT * sum(batches.values())
    groups = [_take_last(on_time, batches, share) for _ in range(runs)]
    if not on_time:
        raise KappaShopError(f"the log is too small to split into a base and {runs} 1% steps")
    runs_in_order = {f"run {number}": group for number, group in enumerate(groups[::-1], 1)}
    return {"base": on_time, **runs_in_order}


def _take_last(
    on_time: list[int], batches: dict[int, int], share: float, taken: int = 0
) -> list[int]:
    """Take batches off the end of `on_time` until they (with `taken` records already) hold
    `share` records; return them in arrival order."""
    group: list[int] = []
    while on_time and taken < share:
        number = on_time.pop()
        group.insert(0, number)
        taken += batches[number]
    return group


def bench_selection(select: list[str] | None) -> list[str]:
    """The dbt selection a benchmark builds: nothing (every model of the project) when
    `select` is empty, else `select` with what its own steps need (ALWAYS_SELECTED)."""
    if not select:
        return []
    return [*select, *(needed for needed in ALWAYS_SELECTED if needed not in select)]
