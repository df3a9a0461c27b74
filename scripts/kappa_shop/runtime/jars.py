"""Jars that Spark and the services beside it need from Maven Central: the Spark distribution
inside the PySpark wheel (spark_home), the Maven repository to fetch from
(KAPPA_SHOP_MAVEN_REPOSITORY, for a mirror), and Ivy resolution with the Ivy that wheel ships,
into a cache outside the project (~/.cache/kappa-shop, or under XDG_CACHE_HOME); and the jars
of a table format (Delta Lake, Apache Iceberg) that Spark's own Ivy fetches when a target's
`spark.jars.packages` names them, into Ivy's cache (~/.ivy2.5.2), which `make setup` has done
once so that no test and no build depends on Maven Central answering later."""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError


def spark_home() -> Path:
    """The Spark distribution inside the pip install of PySpark."""
    import pyspark

    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-class").is_file():
        raise KappaShopError(f"{home} has no bin/spark-class: reinstall pyspark (make setup)")
    return home


# Maven Central, or the mirror KAPPA_SHOP_MAVEN_REPOSITORY names
MAVEN_REPOSITORY = os.environ.get("KAPPA_SHOP_MAVEN_REPOSITORY", "https://repo1.maven.org/maven2")


def cache_directory() -> Path:
    """~/.cache/kappa-shop (or under XDG_CACHE_HOME): jars fetched once, outside the project."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kappa-shop"


def resolve_with_ivy(module: str, directory: Path, what: str) -> None:
    """Resolve the dependencies of the Ivy module `module` (its ivy.xml text) from Maven Central
    (KAPPA_SHOP_MAVEN_REPOSITORY) with the Ivy that the PySpark wheel ships, and retrieve their
    jars into `directory`, marked complete; one line naming the cause when that fails."""
    ivy_jars = sorted((spark_home() / "jars").glob("ivy-*.jar"))
    if not ivy_jars:
        raise KappaShopError(f"no Ivy jar in {spark_home() / 'jars'}: reinstall pyspark")
    work = directory.parent
    work.mkdir(parents=True, exist_ok=True)
    settings = work / "ivysettings.xml"
    settings.write_text(
        "<ivysettings><settings defaultResolver='central'/><resolvers>"
        f"<ibiblio name='central' m2compatible='true' root='{MAVEN_REPOSITORY}'/>"
        "</resolvers></ivysettings>\n"
    )
    ivy_file = work / "ivy.xml"
    ivy_file.write_text(module)
    partial = work / "jars.partial"
    shutil.rmtree(partial, ignore_errors=True)
    command = [
        "java", "-jar", str(ivy_jars[-1]), "-settings", str(settings),
        "-cache", str(work / "ivy-cache"), "-ivy", str(ivy_file), "-confs", "default",
        "-retrieve", f"{partial}/[artifact]-[revision](-[classifier]).[ext]",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not any(partial.glob("*.jar")):
        # Ivy's cause (a server it could not reach) or what it could not find
        lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
        causes = [line for line in lines if line.startswith("Server access error")]
        causes += [line.strip(": ") for line in lines if line.endswith("not found")]
        raise KappaShopError(
            f"cannot fetch {what} from {MAVEN_REPOSITORY}: "
            + (causes[0] if causes else "no jar retrieved")
            + " (set KAPPA_SHOP_MAVEN_REPOSITORY to a Maven mirror you can reach)"
        )
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    (directory / ".complete").touch()


# Spark 4's own Ivy cache (spark.jars.ivy unset), where spark.jars.packages lands
IVY_HOME = Path.home() / ".ivy2.5.2"  # Spark 4's default (spark.jars.ivy unset)


def package_version(settings: dict[str, Any], artifact: str) -> str | None:
    """The version of `artifact` (group:name) a target's Spark settings fetch, or None."""
    packages = str(settings.get("spark.jars.packages", ""))
    for package in (part.strip() for part in packages.split(",")):
        if package.startswith(artifact + ":"):
            return package.rsplit(":", 1)[1]
    return None


def cached_jar(artifact: str, version: str) -> Path:
    """Where Spark's Ivy keeps the jar of `artifact` at `version` once fetched."""
    return IVY_HOME / "jars" / f"{artifact.replace(':', '_')}-{version}.jar"


def jar_url(artifact: str, version: str) -> str:
    """Where Maven Central (or the mirror) serves the jar of `artifact` at `version`."""
    group, name = artifact.split(":")
    return f"{MAVEN_REPOSITORY}/{group.replace('.', '/')}/{name}/{version}/{name}-{version}.jar"


def jars_unavailable(artifact: str, version: str, timeout: float = 15.0) -> str | None:
    """Why Spark could not get the jar of `artifact` at `version` on this machine, or None if
    it can: it is in Ivy's cache, or Maven Central answers for it."""
    if cached_jar(artifact, version).is_file():
        return None
    url = jar_url(artifact, version)
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as error:
        return f"{MAVEN_REPOSITORY} answered {error.code} for {url}"
    except OSError as error:
        return (
            f"{artifact}:{version} is not in Ivy's cache ({IVY_HOME}) and {MAVEN_REPOSITORY} "
            f"is unreachable ({error})"
        )


def fetch(artifact: str, version: str) -> Path:
    """Have Spark's Ivy fetch `artifact` at `version` (with its dependencies) into its cache,
    as a Spark whose settings name it would on its first start. Returns the jar."""
    jar = cached_jar(artifact, version)
    if jar.is_file():
        return jar
    from pyspark.sql import SparkSession

    # Spark resolves spark.jars.packages when its JVM starts, before any work: a local
    # session of one core, stopped at once, is the whole fetch
    session = (
        SparkSession.builder.master("local[1]")
        .appName("kappa_shop_fetch_jars")
        .config("spark.jars.packages", f"{artifact}:{version}")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    session.stop()
    if not jar.is_file():
        raise KappaShopError(
            f"Spark's Ivy did not fetch {artifact}:{version} into {IVY_HOME}: "
            f"{jars_unavailable(artifact, version) or 'see its output above'}"
        )
    return jar
