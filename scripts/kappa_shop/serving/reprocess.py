"""Kappa reprocessing (`kappa-shop reprocess`, docs/reprocessing.md): the whole DAG rebuilt from
the log into a new version beside the served one, caught up to the newest ingested batch,
tested, compared with the served version model by model, and only then switched to.

Each step records itself in the registry (kappa_shop.serving.versions), so a reprocess killed
at any step leaves the served version as it was, and the next command finds what it left."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import checksums
from kappa_shop.serving.versions import (
    NOT_SWITCHED,
    consumed_through,
    fault_point,
    newest_ingested,
    open_serving,
    read_versions,
    record_event,
    record_served,
    served_relations,
    shown_names,
    switch,
    version_schema,
    version_schemas,
)


@dataclass(frozen=True)
class Change:
    """What a new version holds against the served one, for one serving name."""

    name: str
    grain: list[str]
    rows_before: int | None  # None: not in the served version
    rows_after: int | None  # None: not in the new version
    added: int = 0
    removed: int = 0
    changed: int = 0

    @property
    def equal(self) -> bool:
        return (
            self.rows_before is not None
            and self.rows_after is not None
            and not (self.added or self.removed or self.changed)
        )


@dataclass
class ReprocessReport:
    serving: str
    served_before: int
    version: int
    through_before: int | None
    through: int | None
    changes: list[Change] = field(default_factory=list)
    switched: bool = False


class Reprocess:
    """`kappa-shop reprocess`, step by step: start, build, catch_up, test, compare, switch
    (run() takes them in order; a test can act between two of them)."""

    def __init__(self, project: DbtProject, progress: Callable[[str], None] = print) -> None:
        self.project = project
        self.progress = progress
        self.warehouse = project.warehouse()
        self.serving = project.schema
        self.relations: dict[str, str] = {}
        self.models: list[str] = []
        self.grains: dict[str, list[str]] = {}

    def start(self) -> None:
        versions = open_serving(self.warehouse, self.serving)
        if versions.served is None:
            raise KappaShopError(
                f"{self.serving} serves no version yet: `kappa-shop build` builds and serves "
                "the first"
            )
        self.served = versions.served
        self.served_relations = versions.relations(versions.served)
        self.version = versions.next_version
        self.schema = version_schema(self.serving, self.version)
        # Two reprocesses started at the same moment (on a shared metastore: `cluster`) take
        # the same number; the first to record it goes on, the other stops before it drops or
        # writes anything.
        started_by = f"reprocess by pid {os.getpid()} on {socket.gethostname()}"
        record_event(self.warehouse, self.serving, self.version, "building", detail=started_by)
        first = next(
            event
            for event in read_versions(self.warehouse, self.serving).events
            if event.version == self.version and event.event == "building"
        )
        if first.detail != started_by:
            raise KappaShopError(
                f"another reprocess ({first.detail}) started version {self.version} of "
                f"{self.serving} at the same moment; it goes on, this one stops having changed "
                "nothing: see `kappa-shop versions`"
            )
        for schema in version_schemas(self.warehouse, self.serving, self.version):
            self.warehouse.sql(f"drop schema if exists {schema} cascade")
        self.progress(
            f"Reprocess: {self.serving} serves version {self.served}; building version "
            f"{self.version} beside it ({self.schema}) from the log in {self.project.raw_schema}"
        )
        fault_point("after_start")

    @property
    def building(self) -> DbtProject:
        """The project built into the new version."""
        return self.project.to(self.project.destination.at_version(self.version))

    def _build(self, *arguments: str) -> Any:
        return self.building.invoke(
            "build", *arguments, "--exclude-resource-type", "test", "unit_test"
        )

    def build(self) -> None:
        """The whole DAG from the log, into the new version."""
        result = self._build("--full-refresh")
        nodes = [item.node for item in result.results if item.node.resource_type == "model"]
        self.models = sorted(
            node.name for node in nodes if node.config.materialized == "exact_incremental"
        )
        self.grains = {node.name: list((node.config.meta or {}).get("grain", [])) for node in nodes}
        self.relations = served_relations(result, self.serving, self.version)
        record_event(self.warehouse, self.serving, self.version, "built", self.relations)
        self.progress(f"  built {len(self.relations)} relations into {self.schema}")
        fault_point("after_build")

    def through(self, version: int | None = None) -> int | None:
        """The newest batch every batch-consuming model of a version has consumed."""
        if version is None or version == self.version:
            return consumed_through(self.warehouse, self.schema, self.models)
        schema = version_schema(self.serving, version)
        # (the new version's batch models: the served version has those it shares with it)
        return consumed_through(self.warehouse, schema, self.models, present_only=True)

    def catch_up(self, attempts: int = 3) -> int | None:
        """Incremental runs of the new version until it has consumed every ingested batch."""
        for _ in range(attempts):
            newest = newest_ingested(self.warehouse, self.project.raw_schema)
            through = self.through()
            if newest is None or (through is not None and through >= newest):
                self.progress(f"  version {self.version} is through ingestion batch {through}")
                return through
            self.progress(
                f"  catching up: version {self.version} is through ingestion batch {through}, "
                f"the log through {newest}"
            )
            self._build()
        raise KappaShopError(
            f"reprocess: version {self.version} did not catch up with the log in {attempts} "
            f"incremental runs (batches keep arriving): {self.serving} still serves version "
            f"{self.served}; run `kappa-shop reprocess` again when ingestion is quieter"
        )

    def test(self) -> None:
        """The new version's data tests; any failure stops the reprocess. (Its unit tests read
        fixtures, not the version's tables: CI's, as `kappa-shop build` leaves them out.)"""
        result = self.building.invoke(
            "test", "--exclude-resource-type", "unit_test", tolerate_failures=True
        )
        failed = sorted(
            item.node.name for item in result.results if str(item.status) in ("fail", "error")
        )
        tests = len(result.results)
        if failed:
            shown = shown_names(failed)
            record_event(
                self.warehouse, self.serving, self.version, "failed",
                detail=f"{len(failed)} of {tests} tests failed: {shown}",
            )  # fmt: skip
            raise KappaShopError(
                f"reprocess: {len(failed)} of {tests} tests failed on version {self.version} "
                f"({shown}; listed above): not switched, {self.serving} still serves version "
                f"{self.served}; version {self.version} stays in {self.schema} to look into"
            )
        self.progress(f"  {tests} data tests passed on version {self.version}")
        fault_point("after_tests")

    def compare(self) -> list[Change]:
        """Per serving name: rows in the new version only, in the served one only, and
        changed (same grain key, other values); a model in one version only, whole. One query
        finds the names whose rows are the same in both (row count and checksum); only the
        others are diffed."""
        from kappa_shop.proof.diff import diff_model

        names = sorted(set(self.relations) | set(self.served_relations))
        both = [name for name in names if name in self.relations and name in self.served_relations]
        sums = checksums(
            self.warehouse,
            [*self.relations.values(), *self.served_relations.values()],
        )
        changes = []
        for name in names:
            new, old = self.relations.get(name), self.served_relations.get(name)
            model = name.split(".")[1]
            grain = self.grains.get(model, [])
            if old is None:
                count = sums[str(new)][0]
                changes.append(Change(name, grain, None, count, added=count))
            elif new is None:
                count = sums[old][0]
                changes.append(Change(name, grain, count, None, removed=count))
            elif name in both and sums[new] == sums[old]:
                changes.append(Change(name, grain, sums[old][0], sums[new][0]))
            else:
                diff = diff_model(
                    self.warehouse, model, grain, new.split(".")[0], old.split(".")[0]
                )
                changes.append(
                    Change(
                        name, grain, diff.full_rows, diff.incremental_rows,
                        added=diff.only_in_incremental, removed=diff.only_in_full,
                        changed=diff.differing,
                    )
                )  # fmt: skip
        return changes

    def switch(self) -> None:
        """Point every serving name at the new version, which must not be behind the served
        one (a reader never sees the log go backwards)."""
        before, after = self.through(self.served), self.through()
        if before is not None and (after is None or after < before):
            after = self.catch_up()
            if after is None or after < before:
                raise KappaShopError(
                    f"reprocess: version {self.version} is through batch {after}, behind the "
                    f"served version {self.served} (through {before}): not switched"
                )
        seconds = switch(
            self.warehouse, self.serving, self.version, self.relations,
            detail=f"reprocess; served version {self.served} before",
        )  # fmt: skip
        record_served(self.project, self.version)
        self.progress(
            f"Switched: {self.serving} serves version {self.version} ({len(self.relations)} "
            f"views, replaced in {seconds:.1f} s); `kappa-shop rollback` switches back to "
            f"version {self.served}"
        )

    def report(self) -> ReprocessReport:
        """The comparison with the served version, printed and returned."""
        report = ReprocessReport(
            self.serving, self.served, self.version, self.through(self.served), self.through()
        )
        report.changes = self.compare()
        self.progress(format_changes(report))
        return report

    def _record_failed(self, error: BaseException) -> None:
        """The new version as failed, with the error's first line (unless a step recorded
        it); a registry that cannot be written is noted on the error, which goes on."""
        try:
            if read_versions(self.warehouse, self.serving).state(self.version) != "failed":
                reason = str(error).strip().splitlines()[0] if str(error).strip() else "stopped"
                record_event(
                    self.warehouse, self.serving, self.version, "failed",
                    detail=f"{type(error).__name__}: {reason}"[:500],
                )  # fmt: skip
        except Exception as recording:  # (the reprocess's own error goes on)
            error.add_note(f"version {self.version} not recorded as failed: {recording}")

    def run(self, switch: bool = True, tests: bool = True) -> ReprocessReport:
        """Every step in order (without the switch: up to the comparison; without `tests`, a
        comparison only, the new version's tests left out: it cannot switch). A step that fails
        records the new version as failed, with the reason, and stops the reprocess."""
        if switch and not tests:
            raise KappaShopError("reprocess: a version is switched to only after its tests pass")
        self.start()
        try:
            self.build()
            self.catch_up()
            if tests:
                self.test()
            report = self.report()
            if not switch:
                record_event(
                    self.warehouse, self.serving, self.version, "built", self.relations,
                    detail=f"compared with version {self.served}; {NOT_SWITCHED}",
                )  # fmt: skip
                return report
            fault_point("before_switch")
            self.switch()
        except (Exception, KeyboardInterrupt) as error:
            self._record_failed(error)
            raise
        report.switched = True
        return report


def format_changes(report: ReprocessReport) -> str:
    """The comparison of a new version with the served one, a line per serving name."""
    lines = [
        f"Version {report.version} against version {report.served_before} (served), through "
        f"ingestion batch {report.through} and {report.through_before}:",
        f"  {'serving name':<52} {'rows before':>11} {'after':>9} {'added':>7} "
        f"{'removed':>7} {'changed':>7}",
    ]
    for change in report.changes:
        before = "-" if change.rows_before is None else f"{change.rows_before:,}"
        after = "-" if change.rows_after is None else f"{change.rows_after:,}"
        lines.append(
            f"  {change.name:<52} {before:>11} {after:>9} {change.added:>7,} "
            f"{change.removed:>7,} {change.changed if change.grain else '-':>7}"
        )
    differing = [change.name for change in report.changes if not change.equal]
    lines.append(
        f"  {len(differing)} of {len(report.changes)} differ"
        + (" (changed: rows with the same grain key and other values; - without a grain)"
           if differing else "")
    )  # fmt: skip
    return "\n".join(lines)
