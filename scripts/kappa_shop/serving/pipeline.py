"""The main job: put the sample log in the raw tables, build every derived table, generate
the docs, and say what was built.

This is what `make run` calls (through `kappa-shop build`). Everything runs in one process,
so ingestion and every dbt command share one SparkSession. The models are built into the
schema's served version and read through its views (kappa_shop.serving.versions).

The sample log comes one of two ways:
- `generated` (the default): the generator writes a small log (SAMPLE_LOG), which is
  delivered to the landing zone and ingested one arrival batch at a time, as in production;
- `seeds`: the hand-written canonical log in seeds/sample_log is loaded as the raw tables.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import BATCH_LOG_TABLE, ingest, ingested_tables
from kappa_shop.log.format import TOPICS
from kappa_shop.log.generator import GeneratorConfig, generate, read_manifest
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.runtime.dbt import DbtProject, models_format
from kappa_shop.runtime.warehouse import table_names
from kappa_shop.serving.versions import build_served, serving_name, shown_names

SAMPLE_LOG = GeneratorConfig(seed=42, events=5_000, days=2.0, batches=6)
LOG_SOURCES = ("generated", "seeds", "ingested")


@dataclass(frozen=True)
class BuiltTable:
    """A table the build produced or read, and how many rows it holds."""

    name: str
    relation: str
    materialization: str
    rows: int


@dataclass(frozen=True)
class BuildSummary:
    """What one build did: tables with row counts, tests passed, where the docs are."""

    log_source: str
    tables: list[BuiltTable]
    raw_tables: list[BuiltTable]
    tests_passed: int | None  # data tests (and unit tests, when asked for); None: no tests
    docs_index: Path | None
    unit_tests: bool = False  # the unit tests ran too (`--unit-tests`)


def data_dir(project: DbtProject) -> Path:
    """Where the sample log and the landing zone live (git-ignored, removed by make clean)."""
    return project.root / "data"


def prepare_sample_log(project: DbtProject, config: GeneratorConfig = SAMPLE_LOG) -> Path:
    """Generate the sample log, unless the same one is already there (same config, same bytes)."""
    log_dir = data_dir(project) / "sample-log"
    manifest_path = log_dir / "manifest.json"
    if manifest_path.is_file() and read_manifest(log_dir)["config"] == asdict(config):
        return log_dir
    if log_dir.exists():
        shutil.rmtree(log_dir)
    generate(config, log_dir)
    return log_dir


def load_generated_sample(project: DbtProject) -> None:
    """Deliver the sample log to the landing zone and ingest it, one arrival batch at a time."""
    warehouse = project.warehouse()
    spark = project.spark()
    log_dir = prepare_sample_log(project)
    landing_dir = data_dir(project) / "landing"
    for batch in batch_numbers(log_dir):
        delivered = deliver(log_dir, landing_dir, [batch])
        if delivered.files_delivered:
            print(f"Arrival batch {batch}: {delivered.files_delivered} files landed")
        ingest(spark, landing_dir, project.raw_schema, warehouse=warehouse)


def load_seed_sample(project: DbtProject) -> None:
    """Load the canonical sample log (seeds/sample_log) as the raw tables, unless the raw
    schema holds an ingested log (loading a seed drops the table it replaces)."""
    ingested = ingested_tables(project.warehouse(), project.raw_schema)
    if ingested:
        raise KappaShopError(
            f"{project.raw_schema} holds an ingested log ({', '.join(ingested)}); the seeds "
            "would replace it. Load them into a schema of their own: "
            "KAPPA_SHOP_SCHEMA=kappa_shop_seeded kappa-shop build --log seeds"
        )
    project.invoke("seed", "--selector", "sample_log")


def check_raw_tables(project: DbtProject) -> None:
    """`--log ingested`: the raw tables hold a log already (ingested by `kappa-shop ingest`
    from landing files or Kafka); nothing is loaded."""
    present = table_names(project.warehouse(), project.raw_schema)
    missing = [topic.raw_table for topic in TOPICS if topic.raw_table not in present]
    if missing:
        raise KappaShopError(
            f"{project.raw_schema} has no {shown_names(missing)}: ingest the log first "
            "(`kappa-shop ingest --landing DIR`, or `--kafka`), or build the sample "
            "(`--log generated` or `--log seeds`)"
        )


def build(
    project: DbtProject,
    docs: bool = True,
    log_source: str = "generated",
    tests: bool = True,
    full_refresh: bool = False,
    unit_tests: bool = False,
) -> BuildSummary:
    """Put the sample log in the raw tables, run `dbt build` (its data tests left out unless
    `tests`; its unit tests only with `unit_tests`; every model rebuilt from the log in place
    with `full_refresh`), and `dbt docs generate`.

    Unit tests are left out by default, as dbt recommends for production builds: their inputs
    are fixtures, not the log, so they say nothing about the tables a build writes, only about
    the models' SQL, which CI checks (`make test`, `kappa-shop slim-ci`) before it is served."""
    if log_source not in LOG_SOURCES:
        raise KappaShopError(f"unknown log source {log_source!r}: use one of {LOG_SOURCES}")
    if log_source == "generated":
        load_generated_sample(project)
    elif log_source == "seeds":
        load_seed_sample(project)
    else:
        check_raw_tables(project)
    unit_tests = unit_tests and tests
    left_out = [*([] if tests else ["test"]), *([] if unit_tests else ["unit_test"])]
    untested = ("--exclude-resource-type", *left_out) if left_out else ()
    refresh = ("--full-refresh",) if full_refresh else ()
    # into the schema's served version; readers' names (<schema>.<model>) are views on it
    build_result = build_served(project, (*untested, *refresh))
    if docs:
        # the default selector leaves seeds out; the docs describe the whole project, under
        # the names readers query (the views of the serving schema)
        # (one thread on Iceberg: compiling a model reads the batch ledger of the schema it
        # names, creating it if missing, and two threads creating it at once collide there,
        # where Spark's own session catalog lets the second `create table if not exists` be)
        threads = ("--threads", "1") if models_format(project.target_name) == "iceberg" else ()
        project.invoke("docs", "generate", "--select", "fqn:*", "source:*", *threads)

    model_nodes = [
        result.node for result in build_result.results if result.node.resource_type == "model"
    ]
    tests_passed = (
        sum(
            1
            for result in build_result.results
            if result.node.resource_type in ("test", "unit_test") and str(result.status) == "pass"
        )
        if tests
        else None
    )
    raw_relations = {
        table: f"{project.raw_schema}.{table}"
        for table in [*(topic.raw_table for topic in TOPICS), BATCH_LOG_TABLE]
    }
    model_relations = {node.name: serving_name(project.schema, node) for node in model_nodes}
    counts = _row_counts(project, {**raw_relations, **model_relations})
    return BuildSummary(
        log_source=log_source,
        tables=[
            BuiltTable(
                node.name,
                model_relations[node.name],
                str(node.config.materialized),
                counts[node.name],
            )
            for node in model_nodes
        ],
        raw_tables=[
            BuiltTable(name, relation, "raw", counts[name])
            for name, relation in raw_relations.items()
        ],
        tests_passed=tests_passed,
        unit_tests=unit_tests,
        docs_index=(project.root / "target" / "index.html") if docs else None,
    )


def _row_counts(project: DbtProject, relations: dict[str, str]) -> dict[str, int]:
    """Count the rows of each relation in one query through the target's connection."""
    union = "\nunion all\n".join(
        f"select '{name}' as table_name, count(*) as row_count from {relation}"
        for name, relation in relations.items()
    )
    return {row["table_name"]: int(row["row_count"]) for row in project.query(union)}


def format_summary(summary: BuildSummary) -> str:
    """The closing lines of `make run`: tables built, their rows, where the docs are."""
    width = max(len(table.name) for table in [*summary.tables, *summary.raw_tables])
    lines = ["", "Summary", "-------"]
    source = (
        "as ingested" if summary.log_source == "ingested" else f"{summary.log_source} sample log"
    )
    lines.append(f"Raw tables ({source}):")
    lines += [
        f"  {table.name:<{width}}  {table.rows:>10,} rows  {table.relation}"
        for table in summary.raw_tables
    ]
    kinds = "data and unit tests" if summary.unit_tests else "data tests"
    tested = (
        "tests not run (--no-tests)"
        if summary.tests_passed is None
        else f"{summary.tests_passed} {kinds} passed"
    )
    lines.append(f"Tables built ({len(summary.tables)}), {tested}:")
    lines += [
        f"  {table.name:<{width}}  {table.rows:>10,} rows  {table.relation}"
        f" ({table.materialization})"
        for table in summary.tables
    ]
    if summary.docs_index is not None:
        lines.append(f"Docs: {summary.docs_index}  (browse them with `make docs-serve`)")
    return "\n".join(lines)
