"""Running dbt in-process, so that one SparkSession serves every command of a pipeline.

dbt-spark's `session` method starts Spark inside the dbt process (12-15 s). Invoking dbt
through its programmatic runner (`dbtRunner`) in one Python process reuses that SparkSession,
so the second and later commands start in about a second instead of again paying for Spark.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

# dbt commands that read no project and so take no target path
UNPARSED_COMMANDS = frozenset(("deps", "debug", "init"))


@dataclass(frozen=True)
class Destination:
    """Where a build goes: the dbt target, the schema (for a serving schema, the names readers
    query), the version of it the models are built in (None: the schema itself), and the schema
    of the raw tables the build reads. One value, handed to every dbt invocation as `--target`
    and the vars profiles.yml (`kappa_schema`), the sources (`raw_schema`) and
    generate_schema_name (`kappa_version`) read, and to every Spark job."""

    target: str
    schema: str
    raw_schema: str
    version: int | None = None

    @property
    def models_schema(self) -> str:
        """The schema the models' tables are built in: `<schema>__v<version>`, or `schema`."""
        return self.schema if self.version is None else f"{self.schema}__v{self.version}"

    def elsewhere(self, schema: str, raw_schema: str) -> Destination:
        """The same target, into `schema` itself (no version), reading `raw_schema`."""
        return replace(self, schema=schema, raw_schema=raw_schema, version=None)

    def at_version(self, version: int) -> Destination:
        """Version `version` of this schema, reading the same raw tables."""
        return replace(self, version=version)

    def dbt_vars(self) -> dict[str, Any]:
        """The vars that say it to dbt: its target schema is the models' own schema (the
        contract keeps its ledger and run lock beside the models, in the target schema), and
        kappa_version null, so that dbt builds there and never in the version a person's
        `dbt run` would pick (macros/serving/models_schema.sql)."""
        return {
            "kappa_schema": self.models_schema,
            "raw_schema": self.raw_schema,
            "kappa_version": None,
        }


@dataclass
class DbtProject:
    """The dbt project at `root`, built where `destination` says: by default, the profile's
    target (`target`, else its default) and schema, reading `<schema>_raw`."""

    root: Path
    target: str | None = None
    profiles_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("DBT_PROFILES_DIR", ".")).resolve()
    )
    destination: Destination = field(default=None)  # type: ignore[assignment]
    _warehouse: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.destination is None:
            self.destination = _profile_destination(self.profiles_dir, self.target)

    def to(self, destination: Destination) -> DbtProject:
        """The same project built into `destination`, on the same warehouse connection."""
        other = replace(self, target=destination.target, destination=destination)
        other._warehouse = self._warehouse
        return other

    def elsewhere(self, schema: str, raw_schema: str) -> DbtProject:
        """The same project and target built into `schema` itself, reading `raw_schema`."""
        return self.to(self.destination.elsewhere(schema, raw_schema))

    @property
    def target_name(self) -> str:
        """The target in use."""
        return self.destination.target

    @property
    def output(self) -> dict[str, Any]:
        """The target's settings from profiles.yml, rendered."""
        from kappa_shop.runtime.spark import profile_output

        return profile_output(self.profiles_dir, self.target_name)

    @property
    def schema(self) -> str:
        """dbt's target schema: where the models are built, or, for a serving schema, the
        names readers query (the models are in `destination.models_schema`)."""
        return self.destination.schema

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
        """The schema of the raw tables the build reads (`<schema>_raw` by default)."""
        return self.destination.raw_schema

    def invoke(
        self,
        *arguments: str,
        dbt_vars: Mapping[str, Any] | None = None,
        tolerate_failures: bool = False,
    ) -> Any:
        """Run one dbt command in this process, into the destination, and return dbt's result
        object. `dbt_vars` are vars of the command's own (the destination's are always given).

        dbt prints its own progress lines. On failure, raises KappaShopError with one line
        naming the command; dbt has already printed which nodes failed and why. With
        `tolerate_failures`, a run that completed with failing nodes returns its result
        instead (a run that could not run at all still raises).
        """
        from dbt.cli.main import dbtRunner

        if "--vars" in arguments or "--target" in arguments:
            raise ValueError("the destination gives --target and --vars: pass dbt_vars instead")
        variables = {**(dbt_vars or {}), **self.destination.dbt_vars()}
        command = [*arguments, "--project-dir", str(self.root)]
        command += ["--profiles-dir", str(self.profiles_dir)]
        command += ["--target", self.target_name, "--vars", json.dumps(variables)]
        if arguments[0] not in UNPARSED_COMMANDS and "--target-path" not in arguments:
            command += ["--target-path", str(self.target_path(dbt_vars))]
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
            f"{self.target_path(dbt_vars) / 'run_results.json'})"
        )

    def target_path(self, dbt_vars: Mapping[str, Any] | None = None) -> Path:
        """Where dbt writes what a command into this destination (with `dbt_vars` of its own)
        leaves: run_results.json, manifest.json, the compiled SQL, the docs. `target/` for the
        profile's own destination without vars of its own, as for plain dbt; for any other,
        `target/destinations/<target>-<models schema>-<digest of the vars>`. dbt keeps its
        partial-parsing state in the target path and parses the whole project again (about 5 s
        here) whenever the profile or the vars differ from those the path last saw; a proof or a
        benchmark switches destination at nearly every command, so each keeps its own."""
        own = _profile_destination(self.profiles_dir, self.target_name)
        if self.destination == own and not dbt_vars:
            return self.root / "target"
        variables = json.dumps({**(dbt_vars or {}), **self.destination.dbt_vars()}, sort_keys=True)
        digest = hashlib.sha1(variables.encode()).hexdigest()[:8]
        name = f"{self.target_name}-{self.destination.models_schema}-{digest}"
        return self.root / "target" / "destinations" / name

    def query(self, sql: str, limit: int = 1000) -> list[dict[str, Any]]:
        """Run a read-only query through dbt's connection to the target; return its rows.

        Works the same on every target (embedded session or Thrift Server), since it goes
        through the adapter rather than a SparkSession of our own.
        """
        result = self.invoke("show", "--inline", sql, "--limit", str(limit), "--log-level", "none")
        table = result.results[0].agate_table
        return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]


def models_format(target: str) -> str:
    """The table format a target builds the models in, as dbt_project.yml's `+file_format`
    reads it from the target's name: 'delta' (`*_delta`), 'iceberg' (`*_iceberg`) or
    'parquet'."""
    for suffix in ("delta", "iceberg"):
        if target.endswith("_" + suffix):
            return suffix
    return "parquet"


def _profile_destination(profiles_dir: Path, target: str | None) -> Destination:
    """The profile's own destination for `target` (None: the profile's default target): its
    schema, reading `<schema>_raw`."""
    from kappa_shop.runtime.spark import default_target, profile_output

    target = target or default_target(profiles_dir)
    schema = str(profile_output(profiles_dir, target)["schema"])
    return Destination(target, schema, f"{schema}_raw")


def _first_line(error: BaseException) -> str:
    """The first non-empty line of an exception's text (dbt errors can run to many lines); for
    a compilation error, its message, not the line naming where it was raised."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Compilation Error in "):
        return lines[1]
    return lines[0] if lines else type(error).__name__
