"""The fast start: one opt-in, off by default, that makes every embedded Spark start and write
faster, and that nothing depends on (docs/fast-start.md).

Turned on by `KAPPA_SHOP_FAST_START=1`. `python -m kappa_shop.runtime.fast_start_build DIR` (what
`make setup KAPPA_SHOP_FAST_START=1` runs) builds into DIR:

- `kappa-shop-hadoop.jar`: Hadoop's local file system with permissions set through java.nio
  instead of a `chmod` process per file and directory Spark writes (java/kappa_shop/hadoop/),
  compiled with the JDK's javac against the PySpark wheel's Hadoop;
- `kappa-shop-classes.jsa`: a class-data sharing archive of the classes a Spark session loads,
  written by a Spark started as the `local` target starts (kappa_shop.runtime.class_archive);
- `spark-fast-start.conf`: a Spark properties file that puts both to use, written last.

Spark reads the properties file when PYSPARK_SUBMIT_ARGS says `--properties-file FILE
--load-spark-defaults pyspark-shell`: PySpark's own variable for the arguments of the
spark-submit that starts the JVM, so it applies to every embedded Spark alike (dbt-spark's
`method: session`, ingestion, the tests) and the profiles stay plain. The file sets only
settings that Spark keeps for this and that a profile's own settings leave in place:
`spark.driver.defaultExtraClassPath` and `spark.driver.defaultJavaOptions` (which Spark puts
before `extraClassPath` and `extraJavaOptions`), and `spark.hadoop.fs.file.impl`. The Makefile
sets PYSPARK_SUBMIT_ARGS when the variable is 1, and so does `kappa-shop`
(apply_from_environment); a PYSPARK_SUBMIT_ARGS of one's own is left as it is.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from kappa_shop.errors import KappaShopError

ENVIRONMENT_VARIABLE = "KAPPA_SHOP_FAST_START"
JAR_NAME = "kappa-shop-hadoop.jar"
ARCHIVE_NAME = "kappa-shop-classes.jsa"
PROPERTIES_NAME = "spark-fast-start.conf"
FILE_SYSTEM = "kappa_shop.hadoop.NioPermissionsLocalFileSystem"
# The JVM says nothing when it cannot use the archive (another JDK, jars changed since it was
# written): it loads the classes from the jars as usual
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def enabled() -> bool:
    """Whether the opt-in is on (KAPPA_SHOP_FAST_START=1)."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "") == "1"


def default_directory() -> Path:
    """Where `make setup KAPPA_SHOP_FAST_START=1` builds: `fast-start/` in the virtualenv."""
    return Path(sys.prefix) / "fast-start"


def spark_jars() -> Path:
    """The PySpark wheel's jars."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def submit_args(directory: Path) -> str:
    """PYSPARK_SUBMIT_ARGS that start Spark with the fast start built in `directory` (and with
    SPARK_CONF_DIR's spark-defaults.conf, if there is one, as without it)."""
    properties = str(directory / PROPERTIES_NAME)
    return shlex.join(["--properties-file", properties, "--load-spark-defaults", "pyspark-shell"])


def settings(directory: Path, java_options: str) -> dict[str, str]:
    """The Spark settings of the fast start built in `directory`, with `java_options` for the
    class archive (to use it, or to write it).

    The class path starts with the jar and then Spark's own jars, ahead of SPARK_CONF_DIR
    (which differs between copies of the project): the JVM maps an archive only for a class
    path that begins as the one it was written with."""
    return {
        "spark.driver.defaultExtraClassPath": os.pathsep.join(
            [str(directory / JAR_NAME), str(spark_jars() / "*")]
        ),
        "spark.driver.defaultJavaOptions": java_options,
        "spark.hadoop.fs.file.impl": FILE_SYSTEM,
    }


def in_use() -> Path | None:
    """The directory of the fast start that PYSPARK_SUBMIT_ARGS names, if it names one."""
    arguments = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for flag, value in itertools.pairwise(arguments):
        if flag == "--properties-file" and Path(value).name == PROPERTIES_NAME:
            return Path(value).parent
    return None


def apply_from_environment() -> None:
    """With KAPPA_SHOP_FAST_START=1 and no PYSPARK_SUBMIT_ARGS of one's own, point
    PYSPARK_SUBMIT_ARGS at the fast start `make setup` built; refuse, in one line, when it has
    not been built. Off, nothing changes."""
    if not enabled() or "PYSPARK_SUBMIT_ARGS" in os.environ:
        return
    directory = default_directory()
    if not (directory / PROPERTIES_NAME).is_file():
        raise KappaShopError(
            f"{ENVIRONMENT_VARIABLE}=1, but the fast start is not built in {directory}: run "
            f"`make setup {ENVIRONMENT_VARIABLE}=1` (or unset {ENVIRONMENT_VARIABLE})"
        )
    os.environ["PYSPARK_SUBMIT_ARGS"] = submit_args(directory)


@contextlib.contextmanager
def left_out() -> Iterator[None]:
    """Start a Spark within without the fast start: it is the embedded targets' alone (a
    cluster's executors have neither the jar nor the archive)."""
    if in_use() is None:
        yield
        return
    ours = os.environ.pop("PYSPARK_SUBMIT_ARGS")
    try:
        yield
    finally:
        os.environ["PYSPARK_SUBMIT_ARGS"] = ours
