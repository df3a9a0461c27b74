"""Slim CI: build and test only what a change touches, as a pull-request workflow would.

dbt compares the project with a manifest of main (`state:modified`: a model's SQL, YAML,
config or a macro it calls changed) and selects those nodes and everything downstream of them
(`+`). They are built with `--full-refresh`: a model whose definition changed must be
rebuilt from the log (the incremental contract promises equality with a full refresh of the
*same* definition), and so must every model downstream of it, whose input changed.

Where main's manifest comes from:
- `--state DIR`: a directory holding main's `manifest.json`, the artifact a CI job on main
  saved (its `target/manifest.json` after `dbt parse` or a build);
- `--base-ref REF`: the project at git ref REF, unpacked into a temporary directory and parsed
  there (what a developer runs locally before pushing).

The target must hold a build of main (the raw tables and the models upstream of the change),
as a CI environment that follows main does; the sample log seeds are never reloaded.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.serving.versions import served_project

SELECTION = ("--select", "state:modified+", "--exclude", "path:seeds/sample_log")
# dbt's node statuses that mean something did not work (skipped follows an upstream failure)
FAILED = ("error", "fail", "runtime error", "partial success", "skipped")


@dataclass(frozen=True)
class SlimCiOutcome:
    """What slim CI selected, what ran, and whether everything passed."""

    selected: list[str]  # unique ids of the selected nodes, in dbt's listing order
    statuses: dict[str, str]  # unique id -> status of what ran (empty on a dry run)
    passed: bool


def manifest_of_ref(project: DbtProject, ref: str, state_dir: Path) -> Path:
    """Parse the project as it is at git ref `ref` and leave its manifest in `state_dir`."""
    archive = subprocess.run(
        ["git", "-C", str(project.root), "archive", "--format=tar", ref],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        message = archive.stderr.decode(errors="replace").strip().splitlines()
        raise KappaShopError(
            f"cannot read git ref {ref!r} of {project.root}: "
            + (message[-1] if message else "git archive failed")
        )
    with tempfile.TemporaryDirectory(prefix="kappa-shop-base-") as base:
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(base, filter="data")
        base_project = DbtProject(
            root=Path(base), profiles_dir=project.profiles_dir, destination=project.destination
        )
        if (Path(base) / "packages.yml").exists():
            base_project.invoke("deps", "--quiet")  # its packages (local ones from the archive)
        base_project.invoke("parse", "--quiet", "--target-path", str(state_dir.resolve()))
    return state_dir / "manifest.json"


def selected_nodes(project: DbtProject, state_dir: Path) -> list[str]:
    """The unique ids slim CI selects: changed since the state, and everything downstream."""
    result = project.invoke(
        "ls", *SELECTION, "--state", str(state_dir), "--output", "json",
        "--output-keys", "unique_id", "--log-level", "none",
    )  # fmt: skip
    return [json.loads(line)["unique_id"] for line in result or []]


def slim_ci(
    project: DbtProject,
    state: Path | None = None,
    base_ref: str | None = None,
    dry_run: bool = False,
    progress: bool = True,
) -> SlimCiOutcome:
    """Build and test `state:modified+` against main's manifest (see the module docstring)."""
    say = print if progress else (lambda *args: None)
    with tempfile.TemporaryDirectory(prefix="kappa-shop-state-") as scratch:
        if base_ref is not None:
            state_dir = Path(scratch)
            say(f"Slim CI: parsing the project at {base_ref} for its manifest")
            manifest_of_ref(project, base_ref, state_dir)
        else:
            assert state is not None
            state_dir = state
            if not (state_dir / "manifest.json").is_file():
                raise KappaShopError(
                    f"no manifest.json in {state_dir}: save main's target/manifest.json there "
                    "(a CI artifact of main), or use --base-ref main"
                )
        selected = selected_nodes(project, state_dir)
        against = base_ref or str(state_dir)
        if not selected:
            say(f"Slim CI: nothing changed since {against}; nothing to build.")
            return SlimCiOutcome([], {}, True)
        kinds = Counter(unique_id.split(".")[0] for unique_id in selected)
        say(
            f"Slim CI: {len(selected)} nodes changed since {against} or downstream of a change "
            f"({', '.join(f'{count} {kind}' for kind, count in sorted(kinds.items()))}):"
        )
        for unique_id in selected:
            if unique_id.startswith(("model.", "seed.", "exposure.")):
                say(f"  {unique_id}")
        if dry_run:
            return SlimCiOutcome(selected, {}, True)
        # into the served version when the target's schema serves versions (docs/reprocessing.md;
        # state:modified ignores the schema a target gives)
        result = served_project(project).invoke(
            "build", *SELECTION, "--state", str(state_dir), "--full-refresh",
            tolerate_failures=True,
        )  # fmt: skip
    statuses = {item.node.unique_id: str(item.status) for item in result.results}
    failed = sorted(unique_id for unique_id, status in statuses.items() if status in FAILED)
    say(
        f"Slim CI: {len(statuses)} nodes ran, "
        + (f"{len(failed)} failed: {', '.join(failed)}" if failed else "all passed")
    )
    return SlimCiOutcome(selected, statuses, not failed)
