"""The benchmark's results: each step's figures (Step), the run's (BenchReport), and how they
are shown: the markdown table, the usual alternative beside ours, the profile of the slowest
models, the successive runs, and the chart, written beside the JSON of the figures."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kappa_shop.bench.plan import (
    BATCH_ON_HISTORY_STEP,
    BATCH_ON_TENTH_STEP,
    LOOKBACK_MODELS,
    PLAIN_STEP,
    WARM_STEP,
)


@dataclass
class Step:
    """One measured step."""

    name: str
    seconds: float
    peak_rss_mib: float
    detail: str = ""
    # for a dbt step: its models' own wall times, slowest first (where the time went)
    models: dict[str, float] = field(default_factory=dict)
    # CPU time (user and system) of the step's processes: this one and Spark's JVM, or the
    # step's own process and its children
    cpu_seconds: float | None = None
    # the share of all the machine's cores busy during the step (any process), 0..1
    machine_busy: float | None = None
    # what the JVM's just-in-time compilers spent compiling during the step (their threads'
    # elapsed time, summed), for the steps in this process's JVM
    jit_seconds: float | None = None


@dataclass
class BenchReport:
    """Everything one bench run measured, with the machine it ran on."""

    events: int
    records: dict[str, int]
    machine: dict[str, str]
    steps: list[Step] = field(default_factory=list)
    # the dbt selection of the project's models it built (`--select`); empty: every model
    selection: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    # per check of every model against a full refresh (bench_checks): the models it compared
    compared: dict[str, list[str]] = field(default_factory=dict)
    # per day model with a lookback baseline: its rows that differ from a full refresh after
    # the late step, ours and the baseline's (only in the table, only in the full refresh)
    differences: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def seconds(self, name: str) -> float:
        return next(step.seconds for step in self.steps if step.name == name)

    def failed_checks(self) -> list[str]:
        """The equality checks that did not find both sides equal, by name."""
        return [name for name, result in self.checks.items() if not result.startswith("equal")]


def format_report(report: BenchReport) -> str:
    """The figures as a markdown table, with the ratios the targets are about."""
    full = report.seconds("full refresh")
    warm = report.seconds(WARM_STEP)
    proportional = report.seconds(BATCH_ON_HISTORY_STEP) / report.seconds(BATCH_ON_TENTH_STEP)
    plain = warm / report.seconds(PLAIN_STEP)
    floor = report.seconds("full refresh for sessions and orders_daily") / report.seconds(
        "hand-written PySpark job"
    )
    backfill = report.seconds("backfill 30 days: dbt microbatch") / report.seconds(
        "backfill 30 days: exact_incremental"
    )
    lines = _step_table(report)
    base = report.records["base"]
    ratios = [
        ("full refresh, events per second", f"{base / full:,.0f}", ""),
        (
            "incremental +1% / full refresh",
            f"{report.seconds('incremental +1%') / full:.1%}",
            "at most 7% (at 10M events)",
        ),
        (
            "incremental +1% late / full refresh",
            f"{report.seconds('incremental +1% late') / full:.1%}",
            "at most 10% (at 10M events)",
        ),
        (
            "incremental +1% / full refresh again, warm",
            f"{report.seconds('incremental +1%') / warm:.1%}",
            "",
        ),
        (
            "incremental with nothing new / full refresh (the fixed cost)",
            f"{report.seconds('incremental, nothing new') / full:.1%}",
            "",
        ),
        (
            "full refresh again, warm / the same models as plain dbt tables",
            f"{plain:.2f}x",
            "at most 1.15x",
        ),
        (
            "full refresh (sessions, orders_daily) / hand-written PySpark",
            f"{floor:.2f}x",
            "at most 1.3x",
        ),
        (
            "microbatch backfill / exact_incremental backfill",
            f"{backfill:.1f}x",
            "at least 8x",
        ),
        (
            "the fixed batch: on the whole history / on a tenth of it",
            f"{proportional:.2f}x",
            "at most 1.25x (10M events against 1M)",
        ),
    ]
    lines += ["", "| ratio | measured | target |", "|---|---:|---|"]
    lines += [f"| {name} | {value} | {target} |" for name, value, target in ratios]
    lines += ["", *format_alternative(report)]
    lines += ["", *format_checks(report)]
    lines += ["", *format_profile(report)]
    return "\n".join(lines)


def format_checks(report: BenchReport) -> list[str]:
    """Every equality check and its result (how many models and rows it compared, or what
    differs)."""
    lines = ["| check | result |", "|---|---|"]
    return lines + [f"| {name} | {result} |" for name, result in report.checks.items()]


def format_alternative(report: BenchReport) -> list[str]:
    """The usual alternative beside ours, per day model: each 1% step's own time of the model
    (dbt's, from its run results) and its rows that differ from a full refresh after them."""
    steps = {item.name: item.models for item in report.steps}
    lines = [
        "The usual alternative for late data: the same day models as dbt-spark's standard "
        "incremental (`insert_overwrite` by day, a 3-day lookback), beside exact_incremental; "
        "each model's own seconds in each step, and its rows that differ from a full refresh "
        "after the late step (in the table but not in the full refresh / the other way round):",
        "",
        "| model | strategy | +1% (s) | +1% late (s) | rows differing from a full refresh |",
        "|---|---|---:|---:|---|",
    ]
    for name, baseline in LOOKBACK_MODELS.items():
        for strategy, model, suffix in (
            ("exact_incremental", name, ""),
            ("insert_overwrite, 3-day lookback", baseline, ": insert_overwrite baselines"),
        ):
            times = [
                steps[f"{step}{suffix}"][model]
                for step in ("incremental +1%", "incremental +1% late")
            ]
            only_here, only_there, _ = report.differences[name][
                "lookback" if model == baseline else "exact_incremental"
            ]
            lines.append(
                f"| {name} | {strategy} | {times[0]:,.1f} | {times[1]:,.1f} "
                f"| {only_here + only_there:,} ({only_here:,} / {only_there:,}) |"
            )
    return lines


def _step_table(report: BenchReport) -> list[str]:
    """The heading line and every step's figures, with what the columns mean."""
    lines = [
        f"Benchmark at {report.events:,} events ({report.machine['cpus']} cores, "
        f"{report.machine['memory_gib']} GiB, PySpark {report.machine['pyspark']}, "
        f"target {report.machine['target']}"
        + (f"; models: {' '.join(report.selection)})" if report.selection else ")"),
        "",
        "| step | wall time (s) | CPU time (s) | cores busy | JIT compiling (s) "
        "| peak memory (MiB) | what |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]

    def figure(value: float | None, form: str) -> str:
        return "" if value is None else format(value, form)

    for item in report.steps:
        lines.append(
            f"| {item.name} | {item.seconds:,.1f} | {figure(item.cpu_seconds, ',.1f')} "
            f"| {figure(item.machine_busy, '.0%')} | {figure(item.jit_seconds, ',.1f')} "
            f"| {item.peak_rss_mib:,.0f} | {item.detail} |"
        )
    return [
        *lines,
        "",
        "CPU time: the step's processes (this one and Spark's JVM; for the generator and the "
        "ingestion alone, their own); cores busy: the share of all the machine's cores in use "
        "during the step, by any process; JIT compiling: what the JVM's just-in-time compilers "
        "spent compiling during the step (elapsed time, summed over their threads).",
    ]


def format_successive(report: BenchReport) -> str:
    """The figures of `bench --successive` as markdown: every step, then each incremental run
    against the full refresh, in the order they ran in the one JVM."""
    full = report.seconds("full refresh")
    lines = _step_table(report)
    lines += [
        "",
        "| incremental run (1% each, one after another in one JVM) | wall time / full refresh "
        "| JIT compiling / wall time | target |",
        "|---|---:|---:|---|",
    ]
    for item in report.steps:
        if item.name.startswith("incremental run "):
            compiling = "" if item.jit_seconds is None else f"{item.jit_seconds / item.seconds:.0%}"
            lines.append(
                f"| {item.name.removeprefix('incremental ')} | {item.seconds / full:.1%} "
                f"| {compiling} | at most 10% |"
            )
    lines += ["", *format_checks(report)]
    lines += ["", *format_profile(report)]
    return "\n".join(lines)


def format_profile(report: BenchReport, slowest: int = 8) -> list[str]:
    """Where each dbt run's time went: its slowest models (dbt's own wall time per model) and
    the sum over all models, which exceeds the step's wall time by what ran in parallel."""
    profiled = [item for item in report.steps if item.models]
    if not profiled:
        return []
    header = "| model | " + " | ".join(f"{item.name} (s)" for item in profiled) + " |"
    lines = [
        f"Slowest models per dbt run (seconds of each model's own run; {slowest} slowest of "
        "each step):",
        "",
        header,
        "|---|" + "---:|" * len(profiled),
    ]
    names: list[str] = []
    for item in profiled:
        names += [name for name in list(item.models)[:slowest] if name not in names]
    for name in names:
        cells = [f"{item.models[name]:,.1f}" if name in item.models else "" for item in profiled]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    sums = [f"{sum(item.models.values()):,.1f}" for item in profiled]
    counts = [str(len(item.models)) for item in profiled]
    lines.append("| all models (sum) | " + " | ".join(sums) + " |")
    lines.append("| models run | " + " | ".join(counts) + " |")
    return lines


def write_results(report: BenchReport, work_dir: Path) -> list[Path]:
    """bench-<events>.json (every figure), .md (the tables) and .svg (the chart) in work_dir;
    for `--successive`, bench-successive-<events>.json and .md."""
    successive = not any(item.name == "incremental +1%" for item in report.steps)
    stem = work_dir / f"bench-{'successive-' if successive else ''}{report.events}"
    paths = [stem.with_suffix(".json"), stem.with_suffix(".md")]
    paths[0].write_text(json.dumps(asdict(report), indent=1) + "\n")
    paths[1].write_text((format_successive if successive else format_report)(report) + "\n")
    if not successive:
        paths.append(stem.with_suffix(".svg"))
        paths[2].write_text(chart(report))
    return paths


def chart(report: BenchReport) -> str:
    """The wall times as horizontal bars, each pair to compare drawn next to each other."""
    from html import escape

    rows = [
        ("full refresh (all models)", "full refresh", "#4c72b0"),
        ("the same as plain dbt tables (warm)", "full refresh as plain dbt tables", "#c44e52"),
        ("full refresh again (warm)", "full refresh again, warm", "#4c72b0"),
        ("incremental, +1% new data", "incremental +1%", "#55a868"),
        ("incremental, +1% with a late tenth", "incremental +1% late", "#55a868"),
        ("incremental, nothing new", "incremental, nothing new", "#8c8c8c"),
        ("backfill 30 days: exact_incremental", "backfill 30 days: exact_incremental", "#55a868"),
        ("backfill 30 days: dbt microbatch", "backfill 30 days: dbt microbatch", "#c44e52"),
        ("dbt: sessions + orders_daily", "full refresh for sessions and orders_daily", "#4c72b0"),
        ("hand-written PySpark job", "hand-written PySpark job", "#c44e52"),
    ]
    longest = max(report.seconds(step) for _, step, _ in rows)
    label_width, bar_width, height = 290, 420, 26
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + bar_width + 90}" '
        f'height="{height * len(rows) + 40}" font-family="sans-serif" font-size="13">',
        f'<text x="4" y="16" font-weight="bold">Wall time at {report.events:,} events '
        f"(seconds; {report.machine['cpus']} cores)</text>",
    ]
    for index, (label, step, colour) in enumerate(rows):
        seconds = report.seconds(step)
        y = 30 + index * height
        width = max(1.0, bar_width * seconds / longest)
        parts += [
            f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{label_width}" y="{y + 3}" width="{width:.1f}" height="{height - 8}" '
            f'fill="{colour}"/>',
            f'<text x="{label_width + width + 4:.1f}" y="{y + 15}">{seconds:,.1f}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
