"""Delta Lake on a target: the jars Spark fetches, checked against the pinned Python package.

A target whose name ends in `_delta` (`local_delta` in profiles.yml) builds the models as
Delta tables. Its Spark settings name Delta's jars (`spark.jars.packages`), which Spark's Ivy
fetches from Maven Central on first use and keeps in its cache (~/.ivy2.5.2). Their version
must be the delta-spark package's of constraints.txt (made for the pinned PySpark): a mismatch
is one clear error here rather than a ClassNotFound deep inside Spark.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime import jars

DELTA_ARTIFACT = "io.delta:delta-spark_2.13"


def delta_version(settings: dict[str, Any]) -> str | None:
    """The Delta version a target's Spark settings fetch, or None when they use no Delta."""
    return jars.package_version(settings, DELTA_ARTIFACT)


def check_delta_pin(settings: dict[str, Any], target: str) -> str | None:
    """The target's Delta version, after checking it is the installed delta-spark's."""
    version = delta_version(settings)
    if version is None:
        return None
    try:
        installed = metadata.version("delta-spark")
    except metadata.PackageNotFoundError:
        raise KappaShopError(
            f"target {target!r} uses Delta Lake {version} but the delta-spark package is not "
            "installed: run `make setup`"
        ) from None
    if installed != version:
        raise KappaShopError(
            f"target {target!r} fetches Delta's jars {DELTA_ARTIFACT}:{version} but the "
            f"installed delta-spark is {installed} (constraints.txt): make the two versions "
            "the same in profiles.yml and constraints.txt"
        )
    return version


def jars_unavailable(version: str) -> str | None:
    """Why Spark could not get Delta's jars of `version` on this machine, or None if it can."""
    return jars.jars_unavailable(DELTA_ARTIFACT, version)


def cached_jar(version: str) -> Path:
    """Where Spark's Ivy keeps the Delta jar of `version` once fetched."""
    return jars.cached_jar(DELTA_ARTIFACT, version)


def class_path_jars(version: str) -> list[Path]:
    """Delta's jars of `version` in Ivy's cache that a JVM needs on its class path (antlr4-runtime,
    their third, is one of Spark's own jars)."""
    return [cached_jar(version), jars.cached_jar("io.delta:delta-storage", version)]


def fetch_jars() -> Path:
    """Have Spark's Ivy fetch Delta's jars of the installed delta-spark's version (with their
    dependencies) into its cache, as a Spark of a Delta target would on its first start:
    `make setup` does this once, so that no test and no build depends on Maven Central answering
    later (a target naming another version is refused: check_delta_pin). Returns the jar."""
    try:
        version = metadata.version("delta-spark")
    except metadata.PackageNotFoundError:
        raise KappaShopError("the delta-spark package is not installed: run `make setup`") from None
    return jars.fetch(DELTA_ARTIFACT, version)


if __name__ == "__main__":
    import sys

    try:
        print(f"Delta Lake's jars are in Ivy's cache: {fetch_jars()}")
    except KappaShopError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
