"""The main job: load the sample log, build every derived table, generate the docs, and say
what was built.

This is what `make run` calls (through `kappa-shop build`). All dbt commands run in one
process so they share one SparkSession.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kappa_shop.dbt import DbtProject


@dataclass(frozen=True)
class BuiltTable:
    """A table the build produced, and how many rows it holds."""

    name: str
    relation: str
    materialization: str
    rows: int


@dataclass(frozen=True)
class BuildSummary:
    """What one build did: tables with row counts, tests passed, where the docs are."""

    tables: list[BuiltTable]
    raw_tables: list[BuiltTable]
    tests_passed: int
    docs_index: Path | None


def load_sample_log(project: DbtProject) -> Any:
    """Load the canonical sample log (the seeds under seeds/sample_log) as the raw tables."""
    return project.invoke("seed", "--selector", "sample_log")


def build(project: DbtProject, docs: bool = True) -> BuildSummary:
    """Load the sample log, run `dbt build` on everything derived, and `dbt docs generate`."""
    seed_result = load_sample_log(project)
    build_result = project.invoke("build")
    if docs:
        # the default selector leaves seeds out; the docs describe the whole project
        project.invoke("docs", "generate", "--select", "fqn:*", "source:*")

    raw_nodes = [result.node for result in seed_result.results]
    model_nodes = [
        result.node for result in build_result.results if result.node.resource_type == "model"
    ]
    tests_passed = sum(
        1
        for result in build_result.results
        if result.node.resource_type in ("test", "unit_test") and str(result.status) == "pass"
    )
    counts = _row_counts(project, [*raw_nodes, *model_nodes])
    return BuildSummary(
        tables=[_built_table(node, counts) for node in model_nodes],
        raw_tables=[_built_table(node, counts) for node in raw_nodes],
        tests_passed=tests_passed,
        docs_index=(project.root / "target" / "index.html") if docs else None,
    )


def _built_table(node: Any, counts: dict[str, int]) -> BuiltTable:
    return BuiltTable(
        name=node.name,
        relation=node.relation_name,
        materialization=str(node.config.materialized),
        rows=counts.get(node.name, 0),
    )


def _row_counts(project: DbtProject, nodes: list[Any]) -> dict[str, int]:
    """Count the rows of each node's relation in one query through the target's connection."""
    if not nodes:
        return {}
    union = "\nunion all\n".join(
        f"select '{node.name}' as node_name, count(*) as row_count from {node.relation_name}"
        for node in nodes
    )
    return {row["node_name"]: int(row["row_count"]) for row in project.query(union)}


def format_summary(summary: BuildSummary) -> str:
    """The closing lines of `make run`: tables built, their rows, where the docs are."""
    width = max(len(table.name) for table in [*summary.tables, *summary.raw_tables])
    lines = ["", "Summary", "-------"]
    lines.append(f"Sample log loaded as raw tables ({len(summary.raw_tables)}):")
    lines += [
        f"  {table.name:<{width}}  {table.rows:>10,} rows  {table.relation}"
        for table in summary.raw_tables
    ]
    lines.append(f"Tables built ({len(summary.tables)}), {summary.tests_passed} tests passed:")
    lines += [
        f"  {table.name:<{width}}  {table.rows:>10,} rows  {table.relation}"
        f" ({table.materialization})"
        for table in summary.tables
    ]
    if summary.docs_index is not None:
        lines.append(f"Docs: {summary.docs_index}  (browse them with `make docs-serve`)")
    return "\n".join(lines)
