"""Serving: stable names for readers over versions of the models (docs/reprocessing.md).

What people and tools query, `<schema>.<model>` (`kappa_shop.sessions`), is a view. It points
at one physical version of the model, built in a schema of its own, `<schema>__v<N>` (seeds
and other custom schemas alike: `<schema>_reference.product_catalog` is a view on
`<schema>__v<N>_reference.product_catalog`). The raw tables are the log and are shared by
every version.

- `kappa-shop build` keeps the served version up to date (the first build of a schema
  creates version 1 and serves it).
- `kappa-shop reprocess` builds the whole DAG from the log into a new version beside the
  served one, catches it up to the newest ingested batch, runs its data tests, compares it
  with the served version model by model, and only then points every view at it.
- `kappa-shop rollback` points the views back at the version served before.
- `kappa-shop versions` lists the versions; `--drop-old` drops those beyond `--keep`.

Which version is served is recorded in an append-only registry, `<schema>.kappa_versions`:
one row per event (building, built, failed, switching, switched, dropped). A switch writes
`switching`, re-points the views one by one, and commits with `switched`; a switch killed in
between is undone by the next command (the views go back to the version the registry
serves), so a reprocess killed at any step leaves the served version as it was.

Each version has its own batch ledger and run lock (they live in its schema), so a version is
a consumer of the log of its own, as a reprocessing job in a Kappa architecture is.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.contract import EARLIER_LEDGER_TABLE, LEDGER_TABLE, RUN_LOCK_TABLE
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import Warehouse, schema_exists, table_names

REGISTRY = "kappa_versions"
# what the contract keeps in a schema it builds into: never served, never a reason to refuse
BOOKKEEPING = (LEDGER_TABLE, EARLIER_LEDGER_TABLE, RUN_LOCK_TABLE, REGISTRY)
EVENTS = ("building", "built", "failed", "switching", "switched", "dropped")
FAULT_POINT = "KAPPA_SHOP_FAULT_POINT"
FIRST_BUILD = "first build"
NOT_SWITCHED = "not switched (--no-switch)"


def version_schema(serving: str, version: int) -> str:
    """The schema a version's models are built in: `<serving>__v<version>`."""
    return f"{serving}__v{version}"


@dataclass(frozen=True)
class Event:
    """One row of the registry."""

    version: int
    event: str
    relations: dict[str, str]  # serving name -> physical relation (built, switching, switched)
    detail: str
    recorded_at: Any = None


@dataclass
class Versions:
    """The registry of a serving schema, as read."""

    serving: str
    events: list[Event] = field(default_factory=list)

    @property
    def served(self) -> int | None:
        """The version the views point at: the last one switched to."""
        switched = [event.version for event in self.events if event.event == "switched"]
        return switched[-1] if switched else None

    @property
    def previous(self) -> int | None:
        """The version served before the served one (what a rollback switches back to), if it
        is still there."""
        served, dropped = self.served, self.dropped
        switched = [event.version for event in self.events if event.event == "switched"]
        for version in reversed(switched):
            if version != served and version not in dropped:
                return version
        return None

    @property
    def dropped(self) -> set[int]:
        return {event.version for event in self.events if event.event == "dropped"}

    @property
    def known(self) -> list[int]:
        """Every version with a schema (not dropped), oldest first."""
        return sorted({event.version for event in self.events} - self.dropped)

    @property
    def next_version(self) -> int:
        return max((event.version for event in self.events), default=0) + 1

    @property
    def interrupted_switch(self) -> Event | None:
        """A `switching` with no `switched` after it: a switch killed half way."""
        for event in reversed(self.events):
            if event.event == "switched":
                return None
            if event.event == "switching":
                return event
        return None

    def relations(self, version: int) -> dict[str, str]:
        """The serving names of a version and what they point at, as last recorded."""
        for event in reversed(self.events):
            if event.version == version and event.relations:
                return event.relations
        return {}

    def state(self, version: int) -> str:
        if version in self.dropped:
            return "dropped"
        if version == self.served:
            return "serving"
        events = [event.event for event in self.events if event.version == version]
        if "switched" in events:
            return "served before"
        return {"switching": "built"}.get(events[-1], events[-1])

    def unfinished(self, version: int) -> bool:
        """Its reprocess has not ended (it runs now, or it was killed): started, neither
        failed nor switched to, nor built to be compared only (--no-switch)."""
        events = [event for event in self.events if event.version == version]
        if not events or version in self.dropped:
            return False
        if any(event.event in ("switched", "failed") for event in events):
            return False
        return not (events[-1].event == "built" and events[-1].detail.endswith(NOT_SWITCHED))

    def detail(self, version: int) -> str:
        """The version's last detail (of its `building` rows, the first: a second is a
        reprocess that started the same version at the same moment and stopped)."""
        events = [event for event in self.events if event.version == version]
        building = [event for event in events if event.event == "building"][1:]
        details = [event.detail for event in events if event not in building]
        return next((text for text in reversed(details) if text), "")


def _literal(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def read_versions(warehouse: Warehouse, serving: str) -> Versions:
    """The registry of `serving` (empty when it has none)."""
    if not schema_exists(warehouse, serving) or not _has_table(warehouse, serving, REGISTRY):
        return Versions(serving)
    rows = warehouse.sql(
        f"select version, event, relations, detail, recorded_at from {serving}.{REGISTRY} "
        # (a tie in sequence, the nanoseconds of two writers, ordered alike by every reader)
        "order by sequence, version, event, detail"
    )
    return Versions(
        serving,
        [
            Event(
                int(row["version"]),
                str(row["event"]),
                json.loads(row["relations"]) if row["relations"] else {},
                str(row["detail"] or ""),
                row["recorded_at"],
            )
            for row in rows
        ],
    )


def shown_names(names: list[str], most: int = 3) -> str:
    """The first few names, and how many more."""
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")


def _has_table(warehouse: Warehouse, schema: str, name: str) -> bool:
    return bool(warehouse.sql(f"show tables in {schema} like '{name}'"))


def record_event(
    warehouse: Warehouse,
    serving: str,
    version: int,
    event: str,
    relations: dict[str, str] | None = None,
    detail: str = "",
) -> None:
    """Append one event to the registry (one small file: a write either lands or does not)."""
    assert event in EVENTS, event
    warehouse.sql(
        f"insert into {serving}.{REGISTRY} select {version}, {_literal(event)}, "
        f"{_literal(json.dumps(relations, sort_keys=True)) if relations else 'null'}, "
        f"{_literal(detail)}, current_timestamp(), {time.time_ns()}"
    )


def open_serving(warehouse: Warehouse, serving: str) -> Versions:
    """The serving schema's registry, created if missing; a switch that was killed half way
    is undone first (the views go back to the served version), with a line saying so."""
    warehouse.sql(f"create schema if not exists {serving}")
    # (before the registry exists: a schema with one is a serving schema, which dbt refuses)
    _refuse_tables_in_serving_schema(warehouse, serving)
    warehouse.sql(
        f"create table if not exists {serving}.{REGISTRY} (version int, event string, "
        "relations string, detail string, recorded_at timestamp, sequence bigint) "
        "using parquet"
    )
    versions = read_versions(warehouse, serving)
    interrupted = versions.interrupted_switch
    if interrupted is not None:
        served = versions.served
        back = versions.relations(served) if served is not None else {}
        _point_views(warehouse, back, stale=set(interrupted.relations) - set(back))
        undone = f"a switch to version {interrupted.version} interrupted; undone"
        if served is None:
            record_event(warehouse, serving, interrupted.version, "failed", detail=undone)
        else:  # the served version's switch again: the interrupted one has a `switched` after it
            record_event(warehouse, serving, served, "switched", back, detail=undone)
        print(
            f"kappa-shop: a switch of {serving} to version {interrupted.version} was "
            f"interrupted; its views point at version {served} again"
        )
        versions = read_versions(warehouse, serving)
    return versions


def _refuse_tables_in_serving_schema(warehouse: Warehouse, serving: str) -> None:
    """A serving schema holds views (and the registry): tables there were built by dbt
    directly, before the schema served versions, and would be hidden by the views."""
    tables = table_names(warehouse, serving)
    views = {
        str(row["viewName"])
        for row in warehouse.sql(f"show views in {serving}")
        if not row.get("isTemporary")
    }
    others = sorted(tables - views - set(BOOKKEEPING))
    if others:
        shown = shown_names(others)
        raise KappaShopError(
            f"{serving} holds tables built by dbt directly ({shown}), where the serving views "
            f"go: keep building it with dbt, or drop it (`drop schema {serving} cascade`; the "
            "log rebuilds every model) and build again, or serve another schema "
            "(KAPPA_SHOP_SCHEMA)"
        )


def _point_views(
    warehouse: Warehouse, relations: dict[str, str], stale: Collection[str] = ()
) -> None:
    """Point each serving name at its physical relation (a view per name, replaced in one
    statement each, in place: a reader finds the old relation or the new one, never no name);
    drop the serving names in `stale` that are not among them."""
    for schema in sorted({name.split(".")[0] for name in relations}):
        warehouse.sql(f"create schema if not exists {schema}")
    for step, (name, physical) in enumerate(sorted(relations.items()), start=1):
        warehouse.sql(
            f"create or replace view {name} with schema evolution as select * from {physical}"
        )
        fault_point(f"switch:{step}")
    for name in sorted(set(stale) - set(relations)):
        warehouse.sql(f"drop view if exists {name}")


def view_targets(warehouse: Warehouse, schemas: list[str]) -> dict[str, str]:
    """Each view of `schemas` and the relation it selects from (`kappa_shop.sessions` ->
    `kappa_shop__v2.sessions`): where readers' names point now."""
    targets = {}
    for schema in schemas:
        if not schema_exists(warehouse, schema):
            continue
        for row in warehouse.sql(f"show views in {schema}"):
            if row.get("isTemporary"):
                continue
            name = f"{schema}.{row['viewName']}"
            text = next(
                str(described["data_type"])
                for described in warehouse.sql(f"describe table extended {name}")
                if described["col_name"] == "View Text"
            )
            targets[name] = text.strip().removeprefix("select * from ")
    return targets


def switch(
    warehouse: Warehouse, serving: str, version: int, relations: dict[str, str], detail: str = ""
) -> float:
    """Point the serving names at `version`, committed by the registry's `switched` row.
    Returns the seconds from the first view replaced to the last (what a reader can see
    half switched)."""
    versions = read_versions(warehouse, serving)
    current = versions.relations(versions.served) if versions.served is not None else {}
    record_event(warehouse, serving, version, "switching", relations, detail)
    started = time.monotonic()
    _point_views(warehouse, relations, stale=set(current))
    seconds = time.monotonic() - started
    fault_point("before_commit")
    record_event(warehouse, serving, version, "switched", relations, detail)
    return seconds


def fault_point(name: str) -> None:
    """Where a test kills a serving command: when KAPPA_SHOP_FAULT_POINT names this point,
    say so on stdout and wait (the test kills the process at the line)."""
    if os.environ.get(FAULT_POINT) == name:
        print(f"kappa-shop: fault point {name}", flush=True)
        sys.stdout.flush()
        time.sleep(3600)


def serving_name(serving: str, node: Any) -> str:
    """The name readers query for a node dbt built into a version of `serving`:
    `kappa_shop__v2.sessions` -> `kappa_shop.sessions`,
    `kappa_shop__v2_reference.product_catalog` -> `kappa_shop_reference.product_catalog`."""
    schema = str(node.schema)
    versioned = re.match(rf"{re.escape(serving)}__v\d+", schema)
    custom = schema[versioned.end() :] if versioned else schema[len(serving) :]
    return f"{serving}{custom}.{node.alias or node.name}"


def served_relations(result: Any, serving: str, version: int) -> dict[str, str]:
    """The serving names of every model and seed a dbt build (its result) built into
    `version`, with the relations they point at."""
    prefix = version_schema(serving, version)
    relations = {}
    for item in result.results:
        node = item.node
        if node.resource_type not in ("model", "seed") or node.config.materialized == "ephemeral":
            continue
        if node.schema == prefix or node.schema.startswith(prefix + "_"):
            relations[serving_name(serving, node)] = f"{node.schema}.{node.alias or node.name}"
    return relations


# where kappa-shop records, for dbt, the version each serving schema serves
# (macros/serving/served_version.sql reads it; a macro path of dbt_project.yml)
SERVED_RECORD = Path(".kappa_shop") / "macros" / "served_versions.sql"


def record_served(project: DbtProject, version: int | None) -> None:
    """Record in the project directory that the project's schema serves `version` on its
    target (None: no version), so that `dbt run`, `dbt build` and `dbt test` typed there build
    the served version with no vars (models_schema()). The registry stays the truth: a run
    whose record is behind it stops in one line (check_not_serving_schema)."""
    path = project.root / SERVED_RECORD
    recorded = _read_record(path)
    schemas = recorded.setdefault(project.target_name, {})
    if version is None:
        schemas.pop(project.schema, None)
    else:
        schemas[project.schema] = version
    if schemas == {} and project.target_name in recorded:
        del recorded[project.target_name]
    text = (
        "{#- Written by kappa-shop (build, reprocess, rollback, versions): the version each "
        "serving schema\n    serves, by target; read by served_version(). Not in git: "
        "rewritten at each of those commands. -#}\n"
        "{% macro kappa_shop_served_versions() %}{{ return("
        + json.dumps(recorded, sort_keys=True)
        + ") }}{% endmacro %}\n"
    )
    described = (
        "version: 2\n\nmacros:\n  - name: kappa_shop_served_versions\n    description: >\n"
        "      Written by kappa-shop: the version each serving schema serves, by target\n"
        "      (read by served_version(); not in git).\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    for where, content in ((path.with_suffix(".yml"), described), (path, text)):
        partial = where.with_name(f".{where.name}.partial")
        partial.write_text(content)
        os.replace(partial, where)


def _read_record(path: Path) -> dict[str, dict[str, int]]:
    """The versions a record holds (nothing, when there is none or it cannot be read)."""
    try:
        found = re.search(r"return\((\{.*\})\)", path.read_text())
        return dict(json.loads(found[1])) if found else {}
    except (OSError, ValueError):
        return {}


def served_project(project: DbtProject) -> DbtProject:
    """The project built into the served version of its schema, when that schema serves
    versions; else the project as it is."""
    served = read_versions(project.warehouse(), project.schema).served
    return project if served is None else project.to(project.destination.at_version(served))


def consumed_through(
    warehouse: Warehouse, schema: str, models: list[str], present_only: bool = False
) -> int | None:
    """The newest ingestion batch every one of `models` has consumed (its ledger in
    `schema`), or None when one of them has consumed nothing. With `present_only`, of those
    of `models` the ledger knows (another version's models: some may be new). A ledger
    under its earlier name (a version built by an earlier package, not run since) is read
    as well."""
    names = (LEDGER_TABLE, EARLIER_LEDGER_TABLE)
    ledger = next((name for name in names if _has_table(warehouse, schema, name)), None)
    if not models or ledger is None:
        return None
    listed = ", ".join(_literal(model) for model in models)
    row = warehouse.sql(
        f"select count(*) as models, min(last_batch_id) as through from ("
        f"select model_name, max(last_batch_id) as last_batch_id "
        f"from {schema}.{ledger} where model_name in ({listed}) "
        "group by model_name)"
    )[0]
    complete = int(row["models"]) == len(models) or (present_only and int(row["models"]) > 0)
    return int(row["through"]) if complete else None


def newest_ingested(warehouse: Warehouse, raw_schema: str) -> int | None:
    from kappa_shop.ingest.ingestion import BATCH_LOG_TABLE

    if not _has_table(warehouse, raw_schema, BATCH_LOG_TABLE):
        return None
    (row,) = warehouse.sql(
        f"select max(ingestion_batch_id) as newest from {raw_schema}.{BATCH_LOG_TABLE}"
    )
    return None if row["newest"] is None else int(row["newest"])


def build_served(
    project: DbtProject, arguments: tuple[str, ...] = (), progress: Callable[[str], None] = print
) -> Any:
    """`dbt build` into the served version of the project's schema (version 1, created and
    served, on the schema's first build); the views then point at what it built. Returns dbt's
    result."""
    warehouse = project.warehouse()
    serving = project.schema
    versions = open_serving(warehouse, serving)
    served = versions.served
    first = served is None
    if served is not None:
        version = served
    else:
        # a first build that failed is taken up again, not left behind
        last = versions.events[-1] if versions.events else None
        if last is not None and last.event == "building" and last.detail == FIRST_BUILD:
            version = last.version
        else:
            version = versions.next_version
            record_event(warehouse, serving, version, "building", detail=FIRST_BUILD)
        progress(f"kappa-shop: {serving} serves no version yet: building version {version}")
    schema = version_schema(serving, version)
    result = project.to(project.destination.at_version(version)).invoke("build", *arguments)
    # (a build of some models adds their names; only a reprocess's switch drops names)
    relations = {**versions.relations(version), **served_relations(result, serving, version)}
    if relations != versions.relations(version) or first:
        switch(warehouse, serving, version, relations, detail=FIRST_BUILD if first else "")
        progress(f"kappa-shop: {serving} serves version {version} ({schema})")
    record_served(project, version)
    return result


def version_schemas(warehouse: Warehouse, serving: str, version: int) -> list[str]:
    """Every schema of a version: `<serving>__v<N>` and its custom ones (`..._reference`)."""
    prefix = version_schema(serving, version)
    return [
        name
        for name in (str(next(iter(row.values()))) for row in warehouse.sql("show schemas"))
        if name == prefix or name.startswith(prefix + "_")
    ]


def rollback(project: DbtProject, progress: Callable[[str], None] = print) -> int:
    """Point the serving names back at the version served before; returns it."""
    warehouse = project.warehouse()
    serving = project.schema
    versions = open_serving(warehouse, serving)
    served, previous = versions.served, versions.previous
    if served is None or previous is None:
        raise KappaShopError(
            f"{serving} has no earlier version to roll back to (serving version {served}; "
            "`kappa-shop versions` lists them)"
        )
    switch(
        warehouse, serving, previous, versions.relations(previous),
        detail=f"rollback from version {served}",
    )  # fmt: skip
    record_served(project, previous)
    progress(
        f"Rolled back: {serving} serves version {previous} again "
        f"({version_schema(serving, previous)}); version {served} stays until "
        "`kappa-shop versions --drop-old`. The next `kappa-shop build` brings version "
        f"{previous} up to date with the code you run it with: the code that built it"
    )
    return previous


def list_versions(project: DbtProject) -> str:
    """`kappa-shop versions`: a line per version."""
    warehouse = project.warehouse()
    versions = open_serving(warehouse, project.schema)
    record_served(project, versions.served)
    lines = [f"{project.schema}: {'version':>7}  {'schema':<32} {'state':<14} detail"]
    for version in versions.known:
        state, detail = versions.state(version), versions.detail(version)
        if versions.unfinished(version):
            # (its reprocess records `failed` or `switched` when it ends, whatever stops it
            # but a kill)
            detail += "; not finished: its reprocess runs now, or was killed"
        lines.append(
            f"{'':{len(project.schema) + 2}}{version:>7}  "
            f"{version_schema(project.schema, version):<32} {state:<14} {detail}"
        )
    if not versions.known:
        lines.append("  no versions: `kappa-shop build` builds and serves the first")
        return "\n".join(lines)
    served = versions.served
    expected = versions.relations(served) if served is not None else {}
    schemas = sorted({name.split(".")[0] for name in expected})
    pointing = view_targets(warehouse, schemas)
    astray = sorted(name for name, target in expected.items() if pointing.get(name) != target)
    if astray:
        lines.append(
            f"{len(astray)} of {len(expected)} views do not point at version {served} "
            f"({shown_names(astray)}): changed outside kappa-shop; the next switch (`kappa-shop "
            "reprocess` or `rollback`) points every view again"
        )
    elif served is not None:
        lines.append(f"{len(expected)} views in {', '.join(schemas)} point at version {served}")
    return "\n".join(lines)


def check_keep(keep: int) -> None:
    if keep < 1:
        raise KappaShopError(f"--keep {keep}: the served version is always kept (at least 1)")


def drop_old_versions(
    project: DbtProject, keep: int, progress: Callable[[str], None] = print
) -> list[int]:
    """Drop every version but `keep`: the served one, then the one a rollback serves, then the
    newest others."""
    check_keep(keep)
    warehouse = project.warehouse()
    serving = project.schema
    versions = open_serving(warehouse, serving)
    ranked = [versions.served, versions.previous, *reversed(versions.known)]
    kept: list[int] = []
    for version in ranked:
        if version is not None and version not in kept and len(kept) < keep:
            kept.append(version)
    dropped = [version for version in versions.known if version not in kept]
    for version in dropped:
        for schema in version_schemas(warehouse, serving, version):
            warehouse.sql(f"drop schema if exists {schema} cascade")
        record_event(warehouse, serving, version, "dropped")
        progress(f"Dropped version {version} ({version_schema(serving, version)})")
    if not dropped:
        progress(f"Nothing to drop: {serving} keeps {len(versions.known)} version(s)")
    return dropped
