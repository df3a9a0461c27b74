"""Running dbt in-process, so that one SparkSession serves every command of a pipeline.

dbt-spark's `session` method starts Spark inside the dbt process (12-15 s). Invoking dbt
through its programmatic runner (`dbtRunner`) in one Python process reuses that SparkSession,
so the second and later commands start in about a second instead of again paying for Spark.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError


@dataclass
class DbtProject:
    """The dbt project at `root`, run against `target` (the profile's default when None)."""

    root: Path
    target: str | None = None
    profiles_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("DBT_PROFILES_DIR", ".")).resolve()
    )
    _warehouse: Any = field(default=None, init=False, repr=False)

    @property
    def target_name(self) -> str:
        """The target in use: the one asked for, else the profile's default."""
        from kappa_shop.runtime.spark import default_target

        return self.target or default_target(self.profiles_dir)

    @property
    def output(self) -> dict[str, Any]:
        """The target's settings from profiles.yml, rendered."""
        from kappa_shop.runtime.spark import profile_output

        return profile_output(self.profiles_dir, self.target_name)

    @property
    def schema(self) -> str:
        """The target's schema, where the models are built."""
        return str(self.output["schema"])

    def spark(self, extra_jars: Sequence[Path] = ()) -> Any:
        """The SparkSession ingestion runs in for this target (started on first use), with
        `extra_jars` on its classpath (such as Spark's Kafka connector; they must be asked for
        by the first call, which starts it)."""
        from kappa_shop.runtime.spark import session_for_output

        return session_for_output(self.output, self.target_name, extra_jars)

    def warehouse(self) -> Any:
        """SQL on this target's tables (kappa_shop.runtime.warehouse.Warehouse), connected once."""
        from kappa_shop.runtime.warehouse import connect

        if self._warehouse is None:
            output = self.output
            spark = self.spark() if output.get("method") == "session" else None
            self._warehouse = connect(output, self.target_name, spark)
        return self._warehouse

    @property
    def raw_schema(self) -> str:
        """The schema of the raw tables: `<schema>_raw` (dbt's custom schema `raw`)."""
        return f"{self.schema}_raw"

    def invoke(
        self, *arguments: str, extra: Sequence[str] = (), tolerate_failures: bool = False
    ) -> Any:
        """Run one dbt command in this process and return dbt's result object.

        dbt prints its own progress lines. On failure, raises KappaShopError with one line
        naming the command; dbt has already printed which nodes failed and why. With
        `tolerate_failures`, a run that completed with failing nodes returns its result
        instead (a run that could not run at all still raises).
        """
        from dbt.cli.main import dbtRunner

        command = [*arguments, "--project-dir", str(self.root), *extra]
        command += ["--profiles-dir", str(self.profiles_dir)]
        if self.target:
            command += ["--target", self.target]
        outcome = dbtRunner().invoke(command)
        if outcome.success:
            return outcome.result
        shown = " ".join(arguments)
        if tolerate_failures and outcome.exception is None and outcome.result is not None:
            return outcome.result
        if outcome.exception is not None:
            raise KappaShopError(f"`dbt {shown}` could not run: {_first_line(outcome.exception)}")
        raise KappaShopError(
            f"`dbt {shown}` finished with failures (listed above; details in "
            f"{self.root / 'target' / 'run_results.json'})"
        )

    def query(self, sql: str, limit: int = 1000) -> list[dict[str, Any]]:
        """Run a read-only query through dbt's connection to the target; return its rows.

        Works the same on every target (embedded session or Thrift Server), since it goes
        through the adapter rather than a SparkSession of our own.
        """
        result = self.invoke("show", "--inline", sql, "--limit", str(limit), "--log-level", "none")
        table = result.results[0].agate_table
        return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]


def _first_line(error: BaseException) -> str:
    """The first non-empty line of an exception's text (dbt errors can run to many lines); for
    a compilation error, its message, not the line naming where it was raised."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Compilation Error in "):
        return lines[1]
    return lines[0] if lines else type(error).__name__
