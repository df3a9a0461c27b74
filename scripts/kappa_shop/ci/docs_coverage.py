"""Documentation coverage: every source, seed, model, column, macro, exposure and singular test
of the project says what it is.

The docs site is the lineage people read, so a gap in it is a defect like a failing test. Two
readings of the project are compared:
- the manifest (`dbt parse`): every resource has a description, every column declared in YAML
  has one, every macro argument in a macro's signature is documented with a type, and no
  documented argument is missing from the signature;
- the catalog (`dbt docs generate`, after a build), when there is one: every column the built
  tables really have is declared in YAML (a column the YAML forgets has no description at all).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

PROJECT = "kappa_shop"
CONTRACT_PACKAGE = "kappa"  # the contract, installed from packages/kappa
# resource types whose nodes must be described (generic test instances describe themselves)
DESCRIBED_NODES = ("model", "seed", "snapshot", "analysis")
MACRO_SIGNATURE = re.compile(r"{%-?\s*(?:macro|test)\s+\w+\s*\((?P<arguments>[^)]*)\)", re.DOTALL)
NO_DESCRIPTION = "no description"


@dataclass(frozen=True, order=True)
class Gap:
    """One undocumented thing: what it is, where it is declared, and what is missing."""

    path: str
    what: str
    missing: str

    def __str__(self) -> str:
        return f"{self.what} ({self.path}): {self.missing}"


def _blank(text: str | None) -> bool:
    return not (text or "").strip()


def _declared_in(resource: dict[str, Any]) -> str:
    """The file that describes a resource: its YAML (patch) when it has one, else its own."""
    path = resource.get("patch_path") or resource["original_file_path"]
    return path.split("://", 1)[-1]  # patch paths read "<package>://models/..."


def _column_gaps(resource: dict[str, Any], label: str, path: str) -> list[Gap]:
    return [
        Gap(path, f"column {label}.{name}", "no description")
        for name, column in resource.get("columns", {}).items()
        if _blank(column.get("description"))
    ]


def _signature_arguments(macro_sql: str) -> list[str]:
    """The argument names of a macro's (or generic test's) signature; none for a
    materialization."""
    match = MACRO_SIGNATURE.search(macro_sql)
    if match is None:
        return []
    names = []
    for argument in match.group("arguments").split(","):
        name = argument.split("=", 1)[0].strip()
        if name:
            names.append(name)
    return names


def manifest_gaps(manifest: dict[str, Any], package: str = PROJECT) -> list[Gap]:
    """What the manifest shows undocumented in `package`."""
    gaps: list[Gap] = []
    for node in manifest["nodes"].values():
        if node["package_name"] != package:
            continue
        path = _declared_in(node)
        kind = node["resource_type"]
        singular_test = kind == "test" and not node.get("test_metadata")
        if kind in DESCRIBED_NODES or singular_test:
            if _blank(node.get("description")):
                gaps.append(Gap(path, f"{kind} {node['name']}", NO_DESCRIPTION))
            gaps += _column_gaps(node, node["name"], path)
    described_sources: set[str] = set()
    for source in manifest["sources"].values():
        if source["package_name"] != package:
            continue
        path = source["original_file_path"]
        label = f"{source['source_name']}.{source['name']}"
        if _blank(source.get("source_description")) and source["source_name"] not in (
            described_sources
        ):
            gaps.append(Gap(path, f"source {source['source_name']}", NO_DESCRIPTION))
        described_sources.add(source["source_name"])
        if _blank(source.get("description")):
            gaps.append(Gap(path, f"source table {label}", NO_DESCRIPTION))
        gaps += _column_gaps(source, label, path)
    for exposure in manifest.get("exposures", {}).values():
        if exposure["package_name"] == package and _blank(exposure.get("description")):
            gaps.append(
                Gap(exposure["original_file_path"], f"exposure {exposure['name']}", NO_DESCRIPTION)
            )
    for macro in manifest["macros"].values():
        if macro["package_name"] != package:
            continue
        path = macro["original_file_path"]
        name = macro["name"]
        if _blank(macro.get("description")):
            gaps.append(
                Gap(path, f"macro {name}", "no description (document it in its macros/ YAML)")
            )
        documented = {argument["name"]: argument for argument in macro.get("arguments", [])}
        for argument in _signature_arguments(macro.get("macro_sql", "")):
            entry = documented.get(argument)
            if entry is None:
                gaps.append(Gap(path, f"argument {name}({argument})", "not documented"))
            elif _blank(entry.get("description")) or _blank(entry.get("type")):
                gaps.append(
                    Gap(path, f"argument {name}({argument})", "needs a type and a description")
                )
        signature = set(_signature_arguments(macro.get("macro_sql", "")))
        for argument in documented:
            if argument not in signature:
                gaps.append(
                    Gap(path, f"argument {name}({argument})", "documented but not in the signature")
                )
    return sorted(set(gaps))


def catalog_gaps(
    manifest: dict[str, Any], catalog: dict[str, Any], package: str = PROJECT
) -> list[Gap]:
    """Columns the built tables have (catalog) that the YAML does not declare (manifest)."""
    gaps: list[Gap] = []
    resources = {**manifest["nodes"], **manifest["sources"]}
    for section in ("nodes", "sources"):
        for unique_id, entry in catalog.get(section, {}).items():
            resource = resources.get(unique_id)
            if resource is None or resource["package_name"] != package:
                continue
            declared = {name.lower() for name in resource.get("columns", {})}
            label = (
                resource["name"]
                if section == "nodes"
                else (f"{resource['source_name']}.{resource['name']}")
            )
            path = _declared_in(resource)
            for column in entry["columns"]:
                if column.lower() not in declared:
                    gaps.append(
                        Gap(path, f"column {label}.{column}", "in the table, not in the YAML")
                    )
    return sorted(set(gaps))


def _read(path: Path, what: str, how: str) -> dict[str, Any]:
    if not path.is_file():
        raise KappaShopError(f"no {what} at {path}: {how}")
    return json.loads(path.read_text())


def check(target_dir: Path, with_catalog: bool | None = None) -> list[Gap]:
    """Every gap the project's artifacts in `target_dir` show. The catalog is read when
    `with_catalog` is true, or when None and a catalog exists."""
    manifest = _read(target_dir / "manifest.json", "manifest", "run `dbt parse` first")
    # the project's own resources, and the macros of the contract's package (packages/kappa)
    gaps = manifest_gaps(manifest) + manifest_gaps(manifest, CONTRACT_PACKAGE)
    catalog_path = target_dir / "catalog.json"
    if with_catalog or (with_catalog is None and catalog_path.is_file()):
        catalog = _read(catalog_path, "catalog", "run `dbt docs generate` after a build first")
        gaps += catalog_gaps(manifest, catalog)
    return sorted(set(gaps))


def format_gaps(gaps: list[Gap]) -> str:
    """The report: one line per gap, or one line saying all is documented."""
    if not gaps:
        return "docs coverage: every source, seed, model, column, macro and exposure is documented"
    lines = [f"docs coverage: {len(gaps)} undocumented:"]
    lines += [f"  {gap}" for gap in gaps]
    return "\n".join(lines)
