"""Jars that Spark and the services beside it need from Maven Central: the Spark distribution
inside the PySpark wheel (spark_home), the Maven repository to fetch from
(KAPPA_SHOP_MAVEN_REPOSITORY, for a mirror), and Ivy resolution with the Ivy that wheel ships,
into a cache outside the project (~/.cache/kappa-shop, or under XDG_CACHE_HOME)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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
