"""The Python side's house (scripts/kappa_shop/__init__.py): wings by job, each importing only
the wings below it, no import circle anywhere, and nothing importing the command line. Every
import counts, at the top of a module and inside a function alike. No Spark."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "kappa_shop"

# from the ground up: a module may import its own wing and the wings before it in this list
WINGS = ("errors", "runtime", "log", "ingest", "proof", "serving", "ops", "bench", "ci")
FACE = ("commands", "cli", "__main__")  # the command line: imports anything, imported by nothing


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        found[name] = path
    return found


def imports(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's own modules (from any depth of its code)."""
    known = modules(package)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for target in targets:
                if target in known and target != name:
                    graph[name].add(target)
    return graph


def wing(module: str) -> str:
    """The wing (or the face) a module belongs to: the first name under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a wing above the importer's, or of the command line by a job."""
    found = []
    for importer, imported in sorted(graph.items()):
        for target in sorted(imported):
            source_wing, target_wing = wing(importer), wing(target)
            if target_wing == "__init__":  # the package's face: __version__
                continue
            if target_wing in FACE and source_wing not in FACE:
                found.append(f"{importer} imports the command line ({target})")
            elif source_wing in WINGS and target_wing not in WINGS:
                found.append(f"{importer} imports {target}, which is no wing")
            elif source_wing in WINGS and WINGS.index(target_wing) > WINGS.index(source_wing):
                found.append(f"{importer} ({source_wing}) imports {target} ({target_wing}), above")
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_lives_in_a_wing():
    strays = [
        name
        for name in modules(PACKAGE)
        if wing(name) not in (*WINGS, *FACE, "__init__") and name != "kappa_shop.errors"
    ]
    assert not strays, f"modules outside every wing: {strays}"
    for name in WINGS[1:]:
        assert (PACKAGE / name / "__init__.py").read_text().strip(), f"{name}/ says not its job"


def test_no_wing_imports_a_wing_above_it_and_no_job_the_command_line():
    assert upward(imports(PACKAGE)) == []


def test_no_import_circle():
    assert circles(imports(PACKAGE)) == []


def test_the_checks_catch_a_climb_and_a_circle(tmp_path):
    """On a made-up house: a log module importing serving (inside a function), a runtime
    module importing the command line, and two runtime modules importing each other."""
    house = tmp_path / "kappa_shop"
    for folder in ("runtime", "log", "serving"):
        (house / folder).mkdir(parents=True)
        (house / folder / "__init__.py").write_text('"""a wing"""\n')
    (house / "__init__.py").write_text("")
    (house / "cli.py").write_text("")
    (house / "log" / "generator.py").write_text(
        "def generate():\n    from kappa_shop.serving.versions import served\n"
    )
    (house / "serving" / "versions.py").write_text("from kappa_shop.runtime import dbt\n")
    (house / "runtime" / "dbt.py").write_text("from kappa_shop.runtime.spark import start\n")
    (house / "runtime" / "spark.py").write_text(
        "from kappa_shop.runtime import dbt\nfrom kappa_shop import cli\n"
    )
    graph = imports(house)
    assert upward(graph) == [
        "kappa_shop.log.generator (log) imports kappa_shop.serving.versions (serving), above",
        "kappa_shop.runtime.spark imports the command line (kappa_shop.cli)",
    ]
    assert circles(graph) == [["kappa_shop.runtime.dbt", "kappa_shop.runtime.spark"]]


@pytest.mark.parametrize("name", sorted(set(modules(PACKAGE)) - {"kappa_shop.__main__"}))
def test_every_module_imports(name):
    """Each module imports on its own (no import that only works after another's)."""
    __import__(name)


def test_the_packages_table_names_are_the_python_sides():
    """runtime/contract.py names the tables the kappa package keeps; its macros define them."""
    from kappa_shop.runtime.contract import LEDGER_TABLE, RUN_LOCK_TABLE

    macros = PACKAGE.parents[1] / "packages" / "kappa" / "macros"
    for name, macro in (
        (LEDGER_TABLE, "ledger/_batch_ledger.sql"),
        (RUN_LOCK_TABLE, "lock/_run_lock_relation.sql"),
    ):
        assert f"identifier='{name}'" in (macros / macro).read_text(), (name, macro)
