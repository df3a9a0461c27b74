"""The fast start: one opt-in, off by default, that makes every embedded Spark start and write
faster, and that nothing depends on (docs/fast-start.md).

Turned on by `KAPPA_SHOP_FAST_START=1`. `python -m kappa_shop.fast_start DIR` (what `make setup
KAPPA_SHOP_FAST_START=1` runs) builds into DIR:

- `kappa-shop-hadoop.jar`: Hadoop's local file system with permissions set through java.nio
  instead of a `chmod` process per file and directory Spark writes (java/kappa_shop/hadoop/),
  compiled with the JDK's javac against the PySpark wheel's Hadoop;
- `kappa-shop-classes.jsa`: a class-data sharing archive of the classes a Spark session loads,
  written by a Spark started as the `local` target starts (kappa_shop.class_archive);
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

import argparse
import contextlib
import itertools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
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


def compile_jar(directory: Path, sources: Path) -> Path:
    """Compile the `.java` files under `sources` against the wheel's jars into
    directory/JAR_NAME, with the JDK's javac."""
    javac = shutil.which("javac")
    if javac is None:
        raise KappaShopError(
            "the fast start compiles java/ with the JDK's javac, which is not on PATH "
            "(Debian: apt-get install openjdk-17-jdk-headless)"
        )
    files = sorted(str(path) for path in sources.rglob("*.java"))
    if not files:
        raise KappaShopError(f"no Java sources under {sources}")
    jar = directory / JAR_NAME
    with tempfile.TemporaryDirectory(prefix="kappa-shop-classes-") as classes:
        subprocess.run(
            [javac, "--release", "17", "-d", classes, "-cp", str(spark_jars() / "*"), *files],
            check=True,
        )
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(Path(classes).rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
    return jar


def build(directory: Path, project_root: Path, profiles_dir: Path) -> None:
    """Build the jar, the class archive and the properties file into `directory` (the
    properties file last: without it nothing uses the other two)."""
    from kappa_shop.class_archive import write_archive

    directory.mkdir(parents=True, exist_ok=True)
    (directory / PROPERTIES_NAME).unlink(missing_ok=True)
    started = time.monotonic()
    jar = compile_jar(directory, project_root / "java" / "kappa_shop" / "hadoop")
    print(f"Built {jar} in {time.monotonic() - started:.0f} s")
    started = time.monotonic()
    archive = directory / ARCHIVE_NAME
    size = write_archive(archive, profiles_dir, settings(directory, ""))
    print(
        f"Wrote {archive} ({size / 2**20:,.0f} MiB of Spark's classes) in "
        f"{time.monotonic() - started:.0f} s"
    )
    lines = [
        "# The fast start (docs/fast-start.md), written by `python -m kappa_shop.fast_start`;",
        "# used when PYSPARK_SUBMIT_ARGS names it: `--properties-file <this file> ...`.",
    ]
    options = f"-XX:SharedArchiveFile={archive} {QUIET}"
    lines += [f"{key} {value}" for key, value in settings(directory, options).items()]
    temporary = directory / f".{PROPERTIES_NAME}.tmp"
    temporary.write_text("\n".join(lines) + "\n")
    temporary.replace(directory / PROPERTIES_NAME)
    print(f"Wrote {directory / PROPERTIES_NAME}")


def main() -> int:
    from kappa_shop.environment import find_project_root

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "directory", type=Path, nargs="?", help="where to build (default: the virtualenv's)"
    )
    arguments = parser.parse_args()
    directory = (arguments.directory or default_directory()).resolve()
    project_root = find_project_root()
    profiles_dir = Path(os.environ.get("DBT_PROFILES_DIR", project_root))
    # the build starts its own Spark with the settings it needs, whatever is set around it
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    try:
        build(directory, project_root, profiles_dir)
    except KappaShopError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
