"""Delta Lake on a target: the jars Spark fetches, checked against the pinned Python package.

A target whose name ends in `_delta` (`local_delta` in profiles.yml) builds the models as
Delta tables. Its Spark settings name Delta's jars (`spark.jars.packages`), which Spark's Ivy
fetches from Maven Central on first use and keeps in its cache (~/.ivy2.5.2). Their version
must be the delta-spark package's of constraints.txt (made for the pinned PySpark): a mismatch
is one clear error here rather than a ClassNotFound deep inside Spark.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

DELTA_ARTIFACT = "io.delta:delta-spark_2.13"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
IVY_HOME = Path.home() / ".ivy2.5.2"  # Spark 4's default (spark.jars.ivy unset)


def delta_version(settings: dict[str, Any]) -> str | None:
    """The Delta version a target's Spark settings fetch, or None when they use no Delta."""
    packages = str(settings.get("spark.jars.packages", ""))
    for package in (part.strip() for part in packages.split(",")):
        if package.startswith(DELTA_ARTIFACT + ":"):
            return package.rsplit(":", 1)[1]
    return None


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


def jar_url(version: str) -> str:
    """Where Maven Central serves the Delta jar of `version`."""
    group, artifact = DELTA_ARTIFACT.split(":")
    directory = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}"
    return f"{directory}/{artifact}-{version}.jar"


def jars_unavailable(version: str, timeout: float = 15.0) -> str | None:
    """Why Spark could not get Delta's jars of `version` on this machine, or None if it can:
    they are in Ivy's cache, or Maven Central answers for them."""
    if cached_jar(version).is_file():
        return None
    request = urllib.request.Request(jar_url(version), method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as error:
        return f"Maven Central answered {error.code} for {jar_url(version)}"
    except OSError as error:
        return (
            f"Delta's jars are not in Ivy's cache ({IVY_HOME}) and Maven Central is "
            f"unreachable ({error})"
        )


def cached_jar(version: str) -> Path:
    """Where Spark's Ivy keeps the Delta jar of `version` once fetched."""
    return IVY_HOME / "jars" / f"{DELTA_ARTIFACT.replace(':', '_')}-{version}.jar"


def class_path_jars(version: str) -> list[Path]:
    """Delta's jars of `version` in Ivy's cache that a JVM needs on its class path (antlr4-runtime,
    their third, is one of Spark's own jars)."""
    storage = IVY_HOME / "jars" / f"io.delta_delta-storage-{version}.jar"
    return [cached_jar(version), storage]


def fetch_jars() -> Path:
    """Have Spark's Ivy fetch Delta's jars of the installed delta-spark's version (with their
    dependencies) into its cache, as a Spark of a Delta target would on its first start:
    `make setup` does this once, so that no test and no build depends on Maven Central answering
    later (a target naming another version is refused: check_delta_pin). Returns the jar."""
    try:
        version = metadata.version("delta-spark")
    except metadata.PackageNotFoundError:
        raise KappaShopError("the delta-spark package is not installed: run `make setup`") from None
    jar = cached_jar(version)
    if jar.is_file():
        return jar
    from pyspark.sql import SparkSession

    # Spark resolves spark.jars.packages when its JVM starts, before any work: a local
    # session of one core, stopped at once, is the whole fetch
    session = (
        SparkSession.builder.master("local[1]")
        .appName("kappa_shop_fetch_delta")
        .config("spark.jars.packages", f"{DELTA_ARTIFACT}:{version}")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    session.stop()
    if not jar.is_file():
        raise KappaShopError(
            f"Spark's Ivy did not fetch {DELTA_ARTIFACT}:{version} into {IVY_HOME}: "
            f"{jars_unavailable(version) or 'see its output above'}"
        )
    return jar


if __name__ == "__main__":
    import sys

    try:
        print(f"Delta Lake's jars are in Ivy's cache: {fetch_jars()}")
    except KappaShopError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
