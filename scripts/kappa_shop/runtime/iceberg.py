"""Apache Iceberg on a target: the runtime jar Spark fetches.

A target whose name ends in `_iceberg` (`local_iceberg` in profiles.yml) builds the models as
Iceberg tables, through Iceberg's session catalog over the session's own Hive metastore. Its
Spark settings name Iceberg's Spark runtime (`spark.jars.packages`, one jar, made for Spark
4.0 and Scala 2.13), which Spark's Ivy fetches from Maven Central on first use and keeps in
its cache; `make setup` fetches the version profiles.yml names, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime import jars

ICEBERG_ARTIFACT = "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13"


def iceberg_version(settings: dict[str, Any]) -> str | None:
    """The Iceberg version a target's Spark settings fetch, or None when they use no Iceberg."""
    return jars.package_version(settings, ICEBERG_ARTIFACT)


def jars_unavailable(version: str) -> str | None:
    """Why Spark could not get Iceberg's runtime of `version` here, or None if it can."""
    return jars.jars_unavailable(ICEBERG_ARTIFACT, version)


def cached_jar(version: str) -> Path:
    """Where Spark's Ivy keeps Iceberg's runtime jar of `version` once fetched."""
    return jars.cached_jar(ICEBERG_ARTIFACT, version)


def fetch_jars(version: str) -> Path:
    """Have Spark's Ivy fetch Iceberg's runtime of `version` (the one the project's Iceberg
    target names: the Makefile reads it from profiles.yml), as that target's Spark would on its
    first start: `make setup` does this once. Returns the jar."""
    return jars.fetch(ICEBERG_ARTIFACT, version)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        print("usage: python -m kappa_shop.runtime.iceberg VERSION", file=sys.stderr)
        sys.exit(2)
    try:
        print(f"Apache Iceberg's runtime is in Ivy's cache: {fetch_jars(sys.argv[1])}")
    except KappaShopError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
