"""The test suite's class-data sharing archive: a start-up option for the short-lived JVMs of
the tests only (docs/testing.md, "The tests' JVMs"), never for `make run` or the benchmark.

Most of the suite's minutes are Spark processes that live a minute or two (a command killed
on purpose, the step after it, a proof's driver), and each spends its first seconds loading
and verifying some 20,000 of Spark's classes. Java's class-data sharing maps them, already
parsed and verified, from an archive (`-XX:SharedArchiveFile`, a standard JVM option since
Java 13). Nothing else changes: the same jars, file system and settings, the same results.

    python tests/jvm_archive.py DIRECTORY     # what `make pytest` runs, when it is stale

writes DIRECTORY/spark-classes.jsa (Spark started once in a scratch directory with the `local`
target's settings, the kinds of statement a build runs, the JVM archiving every class it loaded from
Spark's jars as it exits: kappa_shop.runtime.class_archive) and DIRECTORY/spark-test-jvm.conf, a
Spark properties file that puts it to use. The root conftest.py points PYSPARK_SUBMIT_ARGS at that
file (`--properties-file <it> --load-spark-defaults pyspark-shell`, the last keeping
SPARK_CONF_DIR's spark-defaults.conf, if any) for the whole pytest run when it exists: the suite's
own Spark and every process its tests start inherit it. A JVM that cannot use the archive loads its
classes from the jars as usual and says nothing.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ARCHIVE_NAME = "spark-classes.jsa"
PROPERTIES_NAME = "spark-test-jvm.conf"
# The JVM says nothing when it cannot use the archive
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def settings(java_options: str) -> dict[str, str]:
    """Spark's jars first on the class path, ahead of SPARK_CONF_DIR (which differs between
    the suite's copies of the project): the JVM maps an archive only for a class path that
    begins as the one it was written with. And `java_options`, to write or use it."""
    from kappa_shop.runtime.fast_start import spark_jars

    return {
        "spark.driver.defaultExtraClassPath": str(spark_jars() / "*"),
        "spark.driver.defaultJavaOptions": java_options,
    }


def build(directory: Path, profiles_dir: Path) -> None:
    """Write the archive, then the properties file (without it nothing uses the archive)."""
    from kappa_shop.runtime.class_archive import write_archive

    directory.mkdir(parents=True, exist_ok=True)
    (directory / PROPERTIES_NAME).unlink(missing_ok=True)
    started = time.monotonic()
    archive = directory / ARCHIVE_NAME
    size = write_archive(archive, profiles_dir, settings(""))
    options = f"-XX:SharedArchiveFile={archive} {QUIET}"
    lines = [
        "# The test suite's class archive (tests/jvm_archive.py): used by the tests' JVMs only",
        *(f"{key} {value}" for key, value in settings(options).items()),
    ]
    temporary = directory / f".{PROPERTIES_NAME}.tmp"
    temporary.write_text("\n".join(lines) + "\n")
    temporary.replace(directory / PROPERTIES_NAME)
    print(
        f"Wrote {archive} ({size / 2**20:,.0f} MiB of Spark's classes) and {PROPERTIES_NAME} "
        f"in {time.monotonic() - started:.0f} s"
    )


def main() -> int:
    directory = Path(sys.argv[1]).resolve()
    # the build starts its own Spark with the settings it needs, whatever is set around it
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    build(directory, Path(os.environ.get("DBT_PROFILES_DIR", Path.cwd())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
