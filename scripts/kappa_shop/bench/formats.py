"""`kappa-shop bench --targets A,B,...`: the standard steps on several embedded targets (one
table format each: parquet, Delta Lake, Apache Iceberg), one after the other on the same log,
and every target's figures side by side in one table.

Each target runs in a `kappa-shop bench --target` process of its own: a target's catalog is set
when its JVM starts (Delta's and Iceberg's both take Spark's session catalog), and a fresh JVM
each keeps the formats' figures comparable (each pays its own warm-up). Each builds in a schema
of its own (`<schema>_<target>`), so that no format finds another's tables; the log is
generated once and reused by the others (the benchmark's own reuse)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kappa_shop.bench.plan import BATCH_ON_HISTORY_STEP, BATCH_ON_TENTH_STEP, WARM_STEP
from kappa_shop.bench.report import BenchReport, Step
from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.dbt import models_format

# what a target's table format is called in the table (dbt_project.yml: by the name's suffix)
FORMAT_NAMES = {"parquet": "parquet", "delta": "Delta", "iceberg": "Iceberg"}
# the steps compared, as the table names them
STEPS = (
    ("full refresh (the JVM's first build)", "full refresh"),
    ("full refresh again, warm", WARM_STEP),
    ("incremental +1%", "incremental +1%"),
    ("incremental +1% late", "incremental +1% late"),
    ("incremental, nothing new", "incremental, nothing new"),
    ("the fixed batch on the whole history", BATCH_ON_HISTORY_STEP),
    ("the fixed batch on a tenth of the history", BATCH_ON_TENTH_STEP),
)


@dataclass
class FormatsReport:
    """Each target's report, in the order run."""

    reports: dict[str, BenchReport]

    @property
    def events(self) -> int:
        """The valid events of the log every target ran on."""
        return next(iter(self.reports.values())).events

    @property
    def failed(self) -> list[str]:
        """`target: check` for every equality check that found a difference."""
        return [
            f"{target}: {name}"
            for target, report in self.reports.items()
            for name in report.failed_checks()
        ]

    def markdown(self) -> str:
        targets = list(self.reports)
        first = targets[0]
        heads = [f"{target} ({FORMAT_NAMES[models_format(target)]})" for target in targets]
        ratios = [f"{target} / {first}" for target in targets[1:]]
        lines = [
            f"The formats side by side at {self.events:,} events (each target's own "
            "`kappa-shop bench --target`, one after the other on the same log; wall seconds, "
            "an incremental step's share of the warm full refresh in brackets):",
            "",
            "| step | " + " | ".join(heads + ratios) + " |",
            "|---|" + "---:|" * (len(heads) + len(ratios)),
        ]
        for label, step in STEPS:
            cells = []
            for target in targets:
                report = self.reports[target]
                seconds = report.seconds(step)
                share = (
                    ""
                    if "full refresh" in step
                    else f" ({seconds / report.seconds(WARM_STEP):.1%})"
                )
                cells.append(f"{seconds:,.1f} s{share}")
            base = self.reports[first].seconds(step)
            cells += [f"{self.reports[target].seconds(step) / base:.2f}x" for target in targets[1:]]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        proportional = [
            report.seconds(BATCH_ON_HISTORY_STEP) / report.seconds(BATCH_ON_TENTH_STEP)
            for report in self.reports.values()
        ]
        lines.append(
            "| the fixed batch: on the whole history / on a tenth | "
            + " | ".join(f"{value:.2f}x" for value in proportional)
            + " |" * (len(ratios) + 1)
        )
        lines.append(
            "| equality checks (every model against a full refresh, the baselines) | "
            + " | ".join(_checks(report) for report in self.reports.values())
            + " |" * (len(ratios) + 1)
        )
        return "\n".join(lines)


def _checks(report: BenchReport) -> str:
    failed = report.failed_checks()
    if failed:
        return f"{len(failed)} of {len(report.checks)} found a difference: " + "; ".join(failed)
    return f"all {len(report.checks)} equal"


def load_report(path: Path) -> BenchReport:
    """A BenchReport from the JSON `write_results` wrote."""
    data = json.loads(path.read_text())
    return BenchReport(**{**data, "steps": [Step(**step) for step in data["steps"]]})


def check_targets(profiles_dir: Path, targets: list[str]) -> None:
    """Every target known to profiles.yml, embedded (method: session) and named once, else one
    line naming the first that is not, before anything runs."""
    from kappa_shop.runtime.spark import profile_output

    if len(targets) < 2 or len(set(targets)) < len(targets):
        raise KappaShopError(
            f"--targets takes two or more different targets, such as "
            f"local,local_delta,local_iceberg (got {','.join(targets)})"
        )
    for target in targets:
        if profile_output(profiles_dir, target).get("method") != "session":
            raise KappaShopError(
                f"--targets: {target!r} is not an embedded-Spark target (method: session); "
                "the benchmark runs on local, local_delta or local_iceberg"
            )


def run_formats(
    root: Path,
    targets: list[str],
    events: int,
    work_dir: Path,
    *,
    seed: int,
    schema: str,
    select: list[str] | None,
    say: Callable[[str], None] = print,
) -> FormatsReport:
    """`kappa-shop bench --target T` for each target in turn (its output shown as it comes),
    its results renamed `bench-<records>-<target>.*`; stops at a target whose bench fails for
    another cause than a difference found."""
    reports: dict[str, BenchReport] = {}
    for number, target in enumerate(targets, 1):
        say(f"bench --targets: {target} ({number} of {len(targets)}), schema {schema}_{target}")
        command = [
            sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "bench",
            "--target", target, "--events", str(events), "--seed", str(seed),
            "--schema", f"{schema}_{target}", "--work-dir", str(work_dir),
        ]  # fmt: skip
        if select:
            command += ["--select", *select]
        for path in _results(work_dir):
            path.unlink()
        returncode = subprocess.run(command, check=False).returncode
        written = _results(work_dir)
        if not any(path.suffix == ".json" for path in written):
            raise KappaShopError(
                f"bench --targets: the benchmark on {target} ended (exit {returncode}) without "
                "its results; its output above says why"
            )
        for path in written:  # bench-<records>.json: named by the log's size, not --events
            path.replace(path.with_name(f"{path.stem}-{target}{path.suffix}"))
        [result] = [path for path in written if path.suffix == ".json"]
        reports[target] = load_report(result.with_name(f"{result.stem}-{target}.json"))
    return FormatsReport(reports)


def _results(work_dir: Path) -> list[Path]:
    """The results one `kappa-shop bench` wrote: bench-<records>.json, .md and .svg."""
    return sorted(
        path for path in work_dir.glob("bench-*.*") if re.fullmatch(r"bench-\d+", path.stem)
    )


def write_formats(report: FormatsReport, work_dir: Path) -> Path:
    """bench-formats-<events>.md in work_dir (each target's own results beside it)."""
    path = work_dir / f"bench-formats-{report.events}.md"
    path.write_text(report.markdown() + "\n")
    return path
