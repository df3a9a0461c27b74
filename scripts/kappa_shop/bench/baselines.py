"""The benchmark's dbt project, made in its work directory: the project's own, whose models,
macros, tests and packages it links as they are, with two things the project itself knows
nothing of.

- The baselines (the usual alternatives to the contract), generated from the project's own
  models so that they compute the same rows by the same SQL and cannot drift from them: for
  each day model of LOOKBACK_MODELS, dbt-spark's standard incremental (insert_overwrite by
  day) whose input filter, the contract's `kappa.in_recomputed_days(...)`, becomes a lookback
  of `kappa_bench_lookback_days` (3) days before the newest day it has built; and orders_daily
  as dbt's `microbatch` strategy (one batch a day, its input filtered by dbt). They are
  enabled by the var `kappa_bench_baselines`, so that the project's own steps build without
  them.
- The fair floor: the var `kappa_bench_plain_tables` builds every model as a plain dbt table
  (no contract: its predicates then read everything).

The benchmark runs dbt on this project (`--project-dir`), in the same Spark session and
warehouse as the project's."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kappa_shop.bench.plan import LOOKBACK_MODELS, MICROBATCH_MODEL
from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.dbt import DbtProject

# what the benchmark's project links from the project, when it has them
LINKED = (
    "models", "macros", ".kappa_shop", "seeds", "tests", "analyses", "snapshots", "docs",
    "packages", "dbt_packages", "packages.yml", "package-lock.yml", "selectors.yml",
)  # fmt: skip
BASELINES_DIR = "bench_models"
# the day model the microbatch baseline is generated from, and the first day of its batches
MICROBATCH_OF = "orders_daily"
MICROBATCH_BEGIN = "2024-03-01"
# the lines of the project's dbt_project.yml the benchmark's project changes
MODEL_PATHS = 'model-paths: ["models"]'
MATERIALIZED = "    +materialized: exact_incremental\n"
PLAIN_SWITCH = (
    "    +materialized: \"{{ 'table' if var('kappa_bench_plain_tables', false) "
    "else 'exact_incremental' }}\"\n"
)
_CONFIG = re.compile(r"\{\{\s*config\((.*?)\)\s*\}\}\n", re.DOTALL)
_PARTITION = re.compile(r"partition_by\s*=\s*\[\s*'(?P<column>\w+)'\s*\]")
_PREDICATE = re.compile(
    r"\{\{\s*kappa\.in_recomputed_days\(\s*'(?P<column>\w+)'"
    r"(?:\s*,\s*parent\s*=\s*'(?P<parent>\w+)')?\s*\)\s*\}\}"
)


def bench_project(project: DbtProject, work_dir: Path) -> DbtProject:
    """The benchmark's dbt project for `project`, made afresh in `work_dir`/project: the same
    destination and warehouse connection, dbt run on the benchmark's project."""
    root = project.root.resolve()
    made = work_dir.resolve() / "project"
    if made.exists():
        shutil.rmtree(made)
    made.mkdir(parents=True)
    settings = (root / "dbt_project.yml").read_text(encoding="utf-8")
    settings = _replace_once(settings, MODEL_PATHS, f'model-paths: ["models", "{BASELINES_DIR}"]')
    settings = _replace_once(settings, MATERIALIZED, PLAIN_SWITCH)
    (made / "dbt_project.yml").write_text(settings, encoding="utf-8")
    for name in LINKED:
        if (root / name).exists():
            (made / name).symlink_to(root / name)
    baselines = made / BASELINES_DIR
    baselines.mkdir()
    for model, baseline in LOOKBACK_MODELS.items():
        (baselines / f"{baseline}.sql").write_text(lookback_sql(root, model), encoding="utf-8")
    microbatch = microbatch_sql(root, MICROBATCH_OF)
    (baselines / f"{MICROBATCH_MODEL}.sql").write_text(microbatch, encoding="utf-8")
    benched = replace(project, root=made)
    benched._warehouse = project._warehouse  # (not copied by replace: one connection)
    return benched


def lookback_sql(root: Path, model: str) -> str:
    """`model`'s SQL as dbt-spark's standard incremental with a lookback: its config replaced
    (insert_overwrite of its day partitions), each `kappa.in_recomputed_days(column)` replaced
    by the days from `kappa_bench_lookback_days` before the newest day built (on a day
    parent's partition column when the predicate names its parent, as the contract's does)."""
    path, sql = _model_sql(root, model)
    day = _partition_column(path, sql)
    start = (
        f"(select date_sub(max(built.{day}), {{{{ var('kappa_bench_lookback_days', 3) }}}}) "
        "from {{ this }} as built)"
    )

    def lookback(match: re.Match[str]) -> str:
        parent = match["parent"]
        column = (
            _partition_column(*_model_sql(root, parent))
            if parent
            else f"to_date({match['column']})"
        )
        # (not `(true)`: Spark would read `where (true)` after a table as an alias and its
        # column names)
        return f"{{% if is_incremental() %}}({column} >= {start}){{% else %}}true{{% endif %}}"

    config = (
        "{{ config(\n    enabled=var('kappa_bench_baselines', false),\n"
        "    materialized='incremental',\n    incremental_strategy='insert_overwrite',\n"
        f"    partition_by=['{day}'],\n) }}}}\n"
    )
    header = (
        f"-- generated by kappa-shop bench from {path.relative_to(root)}: the same SQL as dbt's "
        "standard incremental with a lookback\n"
    )
    return header + _generated(path, sql, config, lookback)


def microbatch_sql(root: Path, model: str) -> str:
    """`model`'s SQL as dbt's microbatch strategy, one batch a day: its config replaced, its
    `kappa.in_recomputed_days(...)` filters dropped (dbt filters each batch's input by the
    event_time of what it reads)."""
    path, sql = _model_sql(root, model)
    day = _partition_column(path, sql)
    config = (
        "{{ config(\n    enabled=var('kappa_bench_baselines', false),\n"
        "    materialized='incremental',\n    incremental_strategy='microbatch',\n"
        f"    event_time='{day}',\n    batch_size='day',\n    begin='{MICROBATCH_BEGIN}',\n"
        f"    partition_by=['{day}'],\n) }}}}\n"
    )
    header = (
        f"-- generated by kappa-shop bench from {path.relative_to(root)}: the same SQL as dbt's "
        "microbatch strategy\n"
    )
    return header + _generated(path, sql, config, lambda match: "true")


def _generated(path: Path, sql: str, config: str, predicate: Callable[[re.Match[str]], str]) -> str:
    """`sql` with its config block replaced by `config` and each in_recomputed_days() by what
    `predicate` (a re.sub replacement) makes of it; refused in one line when it has none."""
    if not _CONFIG.search(sql) or not _PREDICATE.search(sql):
        raise KappaShopError(
            f"{path} no longer starts with a config block and filters its input with "
            "kappa.in_recomputed_days(): the benchmark cannot make its baseline from it"
        )
    return _PREDICATE.sub(predicate, _CONFIG.sub(lambda match: config, sql, count=1))


def _model_sql(root: Path, model: str) -> tuple[Path, str]:
    """The path and SQL of the project's model `model`."""
    found = sorted((root / "models").rglob(f"{model}.sql"))
    if len(found) != 1:
        raise KappaShopError(f"the benchmark needs one model {model} under {root / 'models'}")
    return found[0], found[0].read_text(encoding="utf-8")


def _partition_column(path: Path, sql: str) -> str:
    """The one partition column of a day model's config."""
    match = _PARTITION.search(sql)
    if not match:
        raise KappaShopError(f"{path} is not partitioned by one day column (partition_by=[...])")
    return match["column"]


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise KappaShopError(
            f"the project's dbt_project.yml has no single `{old.strip()}`: the benchmark cannot "
            "make its project from it"
        )
    return text.replace(old, new)
