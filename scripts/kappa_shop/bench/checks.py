"""The benchmark's equality checks: tables the benchmark built one way (incrementally, or by
the hand-written job) against the same models built another way from the same records (a full
refresh), every model and every column compared by the proof's diff
(kappa_shop.proof.diff.diff_models: key by key where the model declares its grain, `meta.grain`,
row for row otherwise). A check's result is one line of the report: `equal (...)`, or `DIFFERENT:`
naming each model that differs and how; `BenchReport.failed_checks` and the command's exit status go
by that first word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kappa_shop.proof.diff import ModelDiff, diff_models


def model_grains(result: Any) -> dict[str, list[str]]:
    """The models a dbt run (its result object) ran, each with its declared grain (empty when
    it declares none: compared row for row)."""
    return {
        item.node.name: list((item.node.config.meta or {}).get("grain", []))
        for item in result.results
        if item.node.resource_type == "model"
    }


def compare_models(
    warehouse: Any, grains: Mapping[str, list[str]], schema: str, reference: str
) -> list[ModelDiff]:
    """Every model of `grains` in `schema` against the same model in `reference`, by name."""
    return diff_models(warehouse, grains, schema, reference)


def summary(diffs: list[ModelDiff], schema: str, reference: str) -> str:
    """A check's line: `equal (N models, R rows)` when every model holds the same rows in both
    schemas, else `DIFFERENT:` and each differing model with its rows only in `schema`, only
    in `reference`, and with the same grain key but other values."""
    differing = [diff for diff in diffs if not diff.equal]
    if not differing:
        rows = sum(diff.incremental_rows for diff in diffs)
        models = "1 model" if len(diffs) == 1 else f"{len(diffs)} models"
        return f"equal ({models}, {rows:,} rows)"
    return f"DIFFERENT: {len(differing)} of {len(diffs)} models differ: " + "; ".join(
        f"{diff.model} ({diff.only_in_incremental:,} rows only in {schema}, "
        f"{diff.only_in_full:,} only in {reference}, {diff.differing:,} with other values)"
        for diff in differing
    )


def check_models(
    warehouse: Any, grains: Mapping[str, list[str]], schema: str, reference: str
) -> str:
    """compare_models, summed up in a check's line."""
    return summary(compare_models(warehouse, grains, schema, reference), schema, reference)
