"""Run the parts of a make target one after another and print, at the end, how long each
took, and how long each pytest module took (docs/testing.md, "How long it takes").

    python tests/parts.py lint parse docs-check pytest

Each part is `make <part>`; the first that fails stops the run (its exit status is this
script's), and the times are printed all the same. A part named pytest* runs with
`--junitxml` added to PYTEST_ADDOPTS, and the time of each test module is summed from that
report (setup, call and teardown of every test, as pytest reports them); a recipe that runs
pytest twice names its second report `target/test-times/<part>-<name>.xml`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

REPORTS = Path("target/test-times")


def run_part(part: str) -> tuple[int, float, list[Path]]:
    """`make PART`: its exit status, its seconds, and its JUnit reports (pytest parts: the
    part's report, and any other its recipe names `target/test-times/<part>-*.xml`)."""
    environment = dict(os.environ)
    if part.startswith("pytest"):
        REPORTS.mkdir(parents=True, exist_ok=True)
        for old in REPORTS.glob(f"{part}*.xml"):
            old.unlink()
        extra = f"--junitxml={REPORTS / f'{part}.xml'}"
        environment["PYTEST_ADDOPTS"] = f"{environment.get('PYTEST_ADDOPTS', '')} {extra}".strip()
    started = time.monotonic()
    status = subprocess.call(["make", "--no-print-directory", part], env=environment)
    reports = sorted(REPORTS.glob(f"{part}*.xml")) if part.startswith("pytest") else []
    return status, time.monotonic() - started, reports


def module_seconds(report: Path) -> dict[str, float]:
    """Seconds per test module (file) in a JUnit report of pytest."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).iter("testcase"):
        dotted = case.get("classname", "")
        module = dotted.replace(".", "/") + ".py"
        if not Path(module).exists():  # a test in a class: the module is one level up
            module = dotted.rsplit(".", 1)[0].replace(".", "/") + ".py"
        seconds[module] += float(case.get("time") or 0)
    return dict(seconds)


def main(parts: list[str]) -> int:
    timings: list[tuple[str, float, str]] = []
    modules: dict[str, float] = {}
    status = 0
    for part in parts:
        status, seconds, reports = run_part(part)
        timings.append((part, seconds, "ok" if status == 0 else f"failed ({status})"))
        for report in reports:
            modules.update(module_seconds(report))
        if status != 0:
            break
    print("\nTime of each part:")
    for part, seconds, outcome in timings:
        print(f"  {part:<16} {seconds / 60:6.1f} min  {outcome}")
    print(f"  {'total':<16} {sum(seconds for _, seconds, _ in timings) / 60:6.1f} min")
    if modules:
        print("Time of each test module (setup, calls, teardown):")
        for module, seconds in sorted(modules.items(), key=lambda item: -item[1]):
            print(f"  {seconds / 60:6.1f} min  {module}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
