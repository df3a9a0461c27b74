"""The kappa package's public macros (packages/kappa) as sqlfluff renders them: SQL of the
shape dbt renders, so that models calling `kappa.<macro>()` lint as they compile."""

from typing import Any


def in_new_batches(batch_column: str) -> str:
    return f"{batch_column} between 1 and 2"


def before_new_batches(batch_column: str) -> str:
    return f"{batch_column} < 1"


def in_recomputed_days(
    time_column: str, before: Any = None, after: Any = None, parent: Any = None
) -> str:
    return f"({time_column} >= timestamp '2024-03-01' and {time_column} < timestamp '2024-03-02')"


def is_recomputed_day(date_column: str) -> str:
    return f"{date_column} in (date '2024-03-01')"


def before_recomputed_days(time_column: str) -> str:
    return f"{time_column} < timestamp '2024-03-01'"


def in_recomputed_buckets(key_column: str) -> str:
    return f"pmod(xxhash64({key_column}), 16) in (0, 1)"


def key_bucket(key_column: str) -> str:
    return f"pmod(xxhash64({key_column}), 16)"


def is_incremental() -> bool:
    return False


def consumed_through(relation: Any) -> int:
    return 0
