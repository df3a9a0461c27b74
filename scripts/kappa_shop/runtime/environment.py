"""The runtime the project needs: where the project is, which Java runs Spark, and the
environment variables every dbt and Spark process of ours shares.

Spark needs a Java runtime (17 here). Without it, PySpark fails deep inside its gateway
launcher with a stack trace that does not say "install Java"; checking first gives one line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime import fast_start

MINIMUM_JAVA_MAJOR = 17
INSTALL_JAVA_HINT = (
    "install a Java 17 runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) "
    "and put `java` on PATH or set JAVA_HOME"
)


@dataclass(frozen=True)
class JavaRuntime:
    """A Java executable and its major version."""

    executable: Path
    major_version: int


def find_project_root(start: Path | None = None) -> Path:
    """Return the dbt project root: the nearest directory upward holding dbt_project.yml."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / "dbt_project.yml").is_file():
            return directory
    raise KappaShopError(
        f"no dbt_project.yml in {here} or above: run kappa-shop from inside the project"
    )


def _java_executable() -> Path | None:
    """The java that PySpark will launch: JAVA_HOME's if set, else the first on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        return candidate if candidate.is_file() else None
    found = shutil.which("java")
    return Path(found) if found else None


def _parse_java_major(version_output: str) -> int | None:
    """Read the major version from `java -version` output ("17.0.15", or "1.8.0_402" -> 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not match:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        return int(match.group(2))
    return major


def check_java() -> JavaRuntime:
    """Find the Java runtime Spark will use and check that it is new enough.

    Raises KappaShopError with one line saying what to install when Java is missing, broken,
    or older than 17.
    """
    executable = _java_executable()
    if executable is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java"
            if os.environ.get("JAVA_HOME")
            else "no `java` on PATH and JAVA_HOME is not set"
        )
        raise KappaShopError(
            f"Spark needs Java {MINIMUM_JAVA_MAJOR}, but {where}: {INSTALL_JAVA_HINT}"
        )
    try:
        completed = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise KappaShopError(
            f"{executable} -version failed ({error}): {INSTALL_JAVA_HINT}"
        ) from None
    major = _parse_java_major(completed.stderr + completed.stdout)
    if completed.returncode != 0 or major is None:
        raise KappaShopError(f"{executable} -version did not report a version: {INSTALL_JAVA_HINT}")
    if major < MINIMUM_JAVA_MAJOR:
        raise KappaShopError(
            f"Spark needs Java {MINIMUM_JAVA_MAJOR} or newer, but {executable} is Java {major}: "
            f"{INSTALL_JAVA_HINT}"
        )
    return JavaRuntime(executable=executable, major_version=major)


def prepare_process_environment(project_root: Path) -> None:
    """Set the defaults every dbt/Spark run of this project shares, keeping any the user set.

    - DBT_PROFILES_DIR: the profiles.yml in the repository.
    - SPARK_LOCAL_IP: bind Spark to loopback (no listening on other interfaces).
    - SPARK_CONF_DIR: conf/, whose log4j2.properties keeps Spark at WARN.
    - PYSPARK_SUBMIT_ARGS: the fast start's, when KAPPA_SHOP_FAST_START=1
      (kappa_shop.runtime.fast_start, docs/fast-start.md); nothing when it is off, the default.

    It also makes the project root the working directory: Spark resolves the warehouse and
    the metastore (relative paths in profiles.yml) against it, so `--project-dir` from
    anywhere reaches the project's own tables.
    """
    os.chdir(project_root)
    os.environ.setdefault("DBT_PROFILES_DIR", str(project_root))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("SPARK_CONF_DIR", str(project_root / "conf"))
    fast_start.apply_from_environment()
    (project_root / "logs").mkdir(exist_ok=True)
